package stepjob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/sethvargo/go-githubactions"
)

// DefaultExchangeAudience is the audience the job's OIDC token is requested
// with for the token exchange (`bazinga serve`'s BAZINGA_OIDC_AUDIENCE).
const DefaultExchangeAudience = "bazinga"

// The runner's variables for requesting the job's OIDC token; they are set
// only in a job with `permissions: id-token: write`.
const (
	EnvIDTokenRequestURL   = "ACTIONS_ID_TOKEN_REQUEST_URL"
	EnvIDTokenRequestToken = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"
)

// maxExchangeBody bounds what the runner and the exchange may answer.
const maxExchangeBody = 64 << 10

// privileged reports whether command is one of the jobs that hold a write
// token and run no repository code.
func privileged(command string) bool {
	return command == CommandPublish || command == CommandLand || command == CommandReconcile
}

// readExchangeInputs reads token-exchange-url and -audience and checks
// where they may be used; it returns the problems found.
func readExchangeInputs(gha *githubactions.Action, getenv func(string) string, in *inputs) []string {
	in.exchangeURL = strings.TrimSpace(input(gha, "token-exchange-url"))
	in.exchangeAudience = strings.TrimSpace(input(gha, "token-exchange-audience"))
	if in.exchangeAudience == "" {
		in.exchangeAudience = DefaultExchangeAudience
	}
	var problems []string
	unprivileged := in.command == CommandAgent || in.command == CommandGate || in.command == CommandValidate
	switch {
	case in.exchangeURL != "" && unprivileged:
		problems = append(problems, "input `token-exchange-url` is set on a "+in.command+" job: only the privileged jobs (publish, land, reconcile) may act as the App. "+
			"This job runs code an agent wrote, so it must never hold a write token (see \"Trust boundary\" in SECURITY.md): remove the input and `id-token: write` from it")
	case in.exchangeURL != "":
		if err := checkExchangeURL(in.exchangeURL); err != nil {
			problems = append(problems, "input `token-exchange-url`: "+err.Error())
		}
		if getenv(EnvIDTokenRequestURL) == "" || getenv(EnvIDTokenRequestToken) == "" {
			problems = append(problems, "input `token-exchange-url` is set but the job cannot request its OIDC token ("+EnvIDTokenRequestURL+" is not set): add `permissions: id-token: write` to this job (and to no unprivileged job)")
		}
	}
	return problems
}

// checkExchangeURL accepts https, or http to this machine (a test or a
// local proxy): the job's OIDC token never crosses a network in clear.
func checkExchangeURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not a URL, e.g. https://bazinga.example.com/token", raw)
	}
	if u.User != nil {
		return errors.New("must not carry credentials")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return fmt.Errorf("%q must be https (the job's OIDC token is sent to it)", raw)
}

// exchangeToken requests the job's OIDC token from the runner (as
// @actions/core's getIDToken does), exchanges it at in.exchangeURL and
// returns the App's installation token, masked in the log.
func exchangeToken(ctx context.Context, client *http.Client, gha *githubactions.Action, getenv func(string) string, in inputs) (ghapi.ExchangedToken, error) {
	idToken, err := requestIDToken(ctx, client, getenv(EnvIDTokenRequestURL), getenv(EnvIDTokenRequestToken), in.exchangeAudience)
	if err != nil {
		return ghapi.ExchangedToken{}, fmt.Errorf("requesting the job's OIDC token: %w", err)
	}
	gha.AddMask(idToken)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.exchangeURL, nil)
	if err != nil {
		return ghapi.ExchangedToken{}, err
	}
	req.Header.Set("Authorization", "Bearer "+idToken)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return ghapi.ExchangedToken{}, fmt.Errorf("token exchange at %s: %w", in.exchangeURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxExchangeBody))
	if err != nil {
		return ghapi.ExchangedToken{}, fmt.Errorf("token exchange at %s: %w", in.exchangeURL, err)
	}
	if resp.StatusCode/100 != 2 {
		var refusal ghapi.ExchangeRefusal
		if json.Unmarshal(body, &refusal) == nil && refusal.Message != "" {
			return ghapi.ExchangedToken{}, fmt.Errorf("the token exchange at %s refused (%s, check %s): %s", in.exchangeURL, resp.Status, refusal.Error, refusal.Message)
		}
		return ghapi.ExchangedToken{}, fmt.Errorf("the token exchange at %s answered %s", in.exchangeURL, resp.Status)
	}
	var out ghapi.ExchangedToken
	if err := json.Unmarshal(body, &out); err != nil || out.Token == "" {
		return ghapi.ExchangedToken{}, fmt.Errorf("the token exchange at %s answered no token", in.exchangeURL)
	}
	gha.AddMask(out.Token)
	if out.Repository != "" && !strings.EqualFold(out.Repository, in.repo.String()) {
		return ghapi.ExchangedToken{}, fmt.Errorf("the token exchange gave a token for %s, not %s", out.Repository, in.repo)
	}
	return out, nil
}

// requestIDToken is GET ACTIONS_ID_TOKEN_REQUEST_URL&audience=… with the
// request token as bearer; the runner answers {"value": "<jwt>"}.
func requestIDToken(ctx context.Context, client *http.Client, reqURL, reqToken, audience string) (string, error) {
	u, err := url.Parse(reqURL)
	if err != nil {
		return "", fmt.Errorf("%s: %w", EnvIDTokenRequestURL, err)
	}
	q := u.Query()
	q.Set("audience", audience)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+reqToken)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxExchangeBody))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the runner answered %s", resp.Status)
	}
	var v struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Value == "" {
		return "", errors.New("the runner's answer holds no token")
	}
	return v.Value, nil
}
