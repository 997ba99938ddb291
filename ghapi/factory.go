package ghapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
)

// ClientFactory hands out go-github clients: one per installation (an
// installation token through ghinstallation, cached so tokens are reused
// until they expire) and one for the App itself (JWT), for listing
// installations. Every client shares one ETag cache and one set of call
// counters.
type ClientFactory struct {
	appID      int64
	key        []byte
	apiURL     *url.URL
	uploadURL  *url.URL
	base       http.RoundTripper
	opts       TransportOptions
	stats      *APIStats
	cache      *ETagCache
	mu         sync.Mutex
	clients    map[int64]*github.Client
	app        *github.Client
	appTr      *ghinstallation.AppsTransport
	appTrError error
}

// NewClientFactory builds a factory for app. base is the transport under
// the chain (nil → a clone of http.DefaultTransport); opts tunes the chain,
// its Identity is set per client.
func NewClientFactory(app App, base http.RoundTripper, opts TransportOptions) (*ClientFactory, error) {
	cfg := app
	if cfg.APIURL == "" {
		cfg.APIURL, cfg.UploadURL = DefaultAPIURL, DefaultUploadURL
	}
	if cfg.UploadURL == "" {
		cfg.UploadURL = cfg.APIURL
	}
	if cfg.ID <= 0 {
		return nil, errors.New("client factory: app id is required")
	}
	if err := ValidatePrivateKey(cfg.PrivateKey); err != nil {
		return nil, fmt.Errorf("client factory: private key: %w", err)
	}
	api, err := url.Parse(cfg.APIURL)
	if err != nil {
		return nil, fmt.Errorf("client factory: api url: %w", err)
	}
	upload, err := url.Parse(cfg.UploadURL)
	if err != nil {
		return nil, fmt.Errorf("client factory: upload url: %w", err)
	}
	if !strings.HasSuffix(api.Path, "/") {
		api.Path += "/"
	}
	if !strings.HasSuffix(upload.Path, "/") {
		upload.Path += "/"
	}
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	if opts.Stats == nil {
		opts.Stats = NewAPIStats()
	}
	if opts.Cache == nil {
		opts.Cache = NewETagCache(0, 0)
	}
	if opts.APIPrefix == "" {
		opts.APIPrefix = strings.TrimSuffix(api.Path, "/")
	}
	f := &ClientFactory{appID: cfg.ID, key: cfg.PrivateKey, apiURL: api, uploadURL: upload,
		base: base, opts: opts, stats: opts.Stats, cache: opts.Cache, clients: map[int64]*github.Client{}}
	return f, nil
}

// ghinstallationBase is the base ghinstallation expects: scheme, host and
// API path without the trailing slash.
func (f *ClientFactory) ghinstallationBase() string {
	return strings.TrimSuffix(f.apiURL.String(), "/")
}

func (f *ClientFactory) chain(identity string) *Transport {
	o := f.opts
	o.Identity = identity
	return NewTransport(f.base, o)
}

func (f *ClientFactory) newClient(rt http.RoundTripper) *github.Client {
	c := github.NewClient(&http.Client{Transport: rt})
	api, upload := *f.apiURL, *f.uploadURL
	c.BaseURL, c.UploadURL = &api, &upload
	return c
}

// Installation returns the client of one installation, creating it on first use.
func (f *ClientFactory) Installation(installationID int64) (*github.Client, error) {
	if installationID <= 0 {
		return nil, fmt.Errorf("installation client: invalid installation id %d", installationID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[installationID]; ok {
		return c, nil
	}
	// ghinstallation sits above the chain: it adds the token, and the
	// chain (cache, retries, counting) sees every request on the wire,
	// the token exchange included.
	itr, err := ghinstallation.New(f.chain("installation/"+strconv.FormatInt(installationID, 10)), f.appID, installationID, f.key)
	if err != nil {
		return nil, fmt.Errorf("installation %d transport: %w", installationID, err)
	}
	itr.BaseURL = f.ghinstallationBase()
	c := f.newClient(itr)
	f.clients[installationID] = c
	return c, nil
}

// App returns the App-level client (JWT-authenticated), for listing
// installations and finding a repository's installation.
func (f *ClientFactory) App() (*github.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.app != nil {
		return f.app, nil
	}
	atr, err := ghinstallation.NewAppsTransport(f.chain("app"), f.appID, f.key)
	if err != nil {
		return nil, fmt.Errorf("app transport: %w", err)
	}
	atr.BaseURL = f.ghinstallationBase()
	f.app = f.newClient(atr)
	return f.app, nil
}

// CallStats returns the API counters of every client of the factory.
func (f *ClientFactory) CallStats() CallStats { return f.stats.Snapshot() }

// InstalledRepo is a repository of an installation.
type InstalledRepo struct {
	Installation int64
	Repo         RepoRef
}

// InstalledRepos lists every repository of every installation of the App
// (GET /app/installations, then GET /installation/repositories with each
// installation's token).
func (f *ClientFactory) InstalledRepos(ctx context.Context) ([]InstalledRepo, error) {
	appClient, err := f.App()
	if err != nil {
		return nil, err
	}
	var out []InstalledRepo
	opts := &github.ListOptions{PerPage: 100}
	for {
		insts, resp, err := appClient.Apps.ListInstallations(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing installations: %w", err)
		}
		for _, inst := range insts {
			c, err := f.Installation(inst.GetID())
			if err != nil {
				return nil, err
			}
			ropts := &github.ListOptions{PerPage: 100}
			for {
				repos, rresp, err := c.Apps.ListRepos(ctx, ropts)
				if err != nil {
					return nil, fmt.Errorf("listing the repositories of installation %d: %w", inst.GetID(), err)
				}
				for _, r := range repos.Repositories {
					if ref, ok := ParseRepo(r.GetFullName()); ok {
						ref.ID = r.GetID()
						out = append(out, InstalledRepo{Installation: inst.GetID(), Repo: ref})
					}
				}
				if rresp.NextPage == 0 {
					break
				}
				ropts.Page = rresp.NextPage
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// NewTokenClient is a go-github client that authenticates with token (a
// workflow's GITHUB_TOKEN, an installation token, a PAT) against the REST API
// at apiURL (GITHUB_API_URL; "" is the public GitHub), through the
// transport chain.
func NewTokenClient(token, apiURL string, opts TransportOptions) (*github.Client, error) {
	apiURL = strings.TrimRight(strings.TrimSpace(apiURL), "/")
	enterprise := apiURL != "" && apiURL != strings.TrimSuffix(DefaultAPIURL, "/")
	if enterprise && opts.APIPrefix == "" && strings.HasSuffix(apiURL, "/api/v3") {
		opts.APIPrefix = "/api/v3"
	}
	if opts.Identity == "" {
		opts.Identity = "token"
	}
	c := github.NewClient(&http.Client{Transport: NewTransport(nil, opts)}).WithAuthToken(token)
	if !enterprise {
		return c, nil
	}
	upload := strings.TrimSuffix(apiURL, "/api/v3") + "/api/uploads/"
	c, err := c.WithEnterpriseURLs(apiURL+"/", upload)
	if err != nil {
		return nil, fmt.Errorf("API URL %q: %w", apiURL, err)
	}
	return c, nil
}
