package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultCredentialsFile is where the setup page writes the App's
// credentials and where ConfigFromEnv looks for them (relative to the
// working directory) unless BAZINGA_CREDENTIALS_FILE names another file.
const DefaultCredentialsFile = "bazinga-app.env"

// Variables of the credentials file besides the ones ConfigFromEnv reads
// (EnvAppID, EnvPrivateKey, EnvWebhookSecret): kept for the operator.
const (
	EnvAppSlug      = "BAZINGA_APP_SLUG"
	EnvClientID     = "BAZINGA_CLIENT_ID"
	EnvClientSecret = "BAZINGA_CLIENT_SECRET"
)

// Credentials are what GitHub's manifest conversion returns and the
// credentials file holds.
type Credentials struct {
	AppID         int64
	Slug          string
	PrivateKey    string // PEM
	WebhookSecret string
	ClientID      string
	ClientSecret  string
}

// ErrCredentialsExist is returned by WriteCredentials when the file is
// already there: setup never overwrites credentials.
var ErrCredentialsExist = errors.New("credentials file already exists")

// WriteCredentials writes c to path as KEY=value lines (the private key
// double-quoted with \n escapes), mode 0600, refusing to replace an
// existing file.
func WriteCredentials(path string, c Credentials, now time.Time) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# GitHub App %q, registered by bazinga serve's setup page on %s.\n", c.Slug, now.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "# Secrets: keep this file private (mode 0600). Environment variables override it.\n")
	for _, kv := range [][2]string{
		{EnvAppID, strconv.FormatInt(c.AppID, 10)},
		{EnvAppSlug, c.Slug},
		{EnvWebhookSecret, c.WebhookSecret},
		{EnvClientID, c.ClientID},
		{EnvClientSecret, c.ClientSecret},
		{EnvPrivateKey, c.PrivateKey},
	} {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], quoteEnv(kv[1]))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", path, ErrCredentialsExist)
	}
	if err != nil {
		return fmt.Errorf("creating the credentials file: %w", err)
	}
	_, err = f.Write(b.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// A half-written file would block the next setup and not start.
		_ = os.Remove(path)
		return fmt.Errorf("writing the credentials file %s: %w", path, err)
	}
	return nil
}

// quoteEnv quotes a value that a plain KEY=value line cannot hold.
func quoteEnv(v string) string {
	if v != "" && !strings.ContainsAny(v, "\n\r\"'\\# \t") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(v) + `"`
}

// readCredentialsFile parses a credentials file: KEY=value lines, blank
// lines and # comments; a value may be double-quoted with \n, \r, \" and \\
// escapes. A missing file is (nil, nil). Errors name the file and line.
func readCredentialsFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	vals := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(strings.TrimPrefix(key, "export "))
		if !ok || key == "" {
			return nil, fmt.Errorf("%s:%d: expected KEY=value", path, n)
		}
		val = strings.TrimSpace(val)
		if strings.HasPrefix(val, `"`) {
			v, err := unquoteEnv(val)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s: %w", path, n, key, err)
			}
			val = v
		}
		if _, dup := vals[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s is set twice", path, n, key)
		}
		vals[key] = val
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return vals, nil
}

func unquoteEnv(q string) (string, error) {
	if len(q) < 2 || !strings.HasSuffix(q, `"`) {
		return "", errors.New("unterminated double quote")
	}
	var b strings.Builder
	body := q[1 : len(q)-1]
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '"' {
			return "", errors.New(`unescaped " inside the value`)
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(body) {
			return "", errors.New("a value ends with a lone backslash")
		}
		switch body[i] {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case '"', '\\':
			b.WriteByte(body[i])
		default:
			return "", fmt.Errorf(`unknown escape \%c`, body[i])
		}
	}
	return b.String(), nil
}
