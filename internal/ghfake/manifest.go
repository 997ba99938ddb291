package ghfake

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// The GitHub App manifest flow
// (docs: apps/sharing-github-apps/registering-a-github-app-from-a-manifest):
//
//  1. a browser POSTs a form with a JSON "manifest" field (and ?state=) to
//     /settings/apps/new or /organizations/{org}/settings/apps/new;
//  2. GitHub registers the App and redirects to the manifest's
//     redirect_url with ?code= (and the state);
//  3. the server exchanges the code, within an hour and once, at
//     POST /app-manifests/{code}/conversions (no authentication) for the
//     App's id, PEM, webhook secret and OAuth client credentials.
//
// The fake hosts one App (Options.AppID, AppSlug): a registration becomes
// that App, and its webhook (hook_attributes) becomes the fake's webhook,
// so a server set up through the flow receives the fake's deliveries.

// manifestTTL is how long a code can be exchanged (GitHub: one hour).
const manifestTTL = time.Hour

// manifestReg is a registration waiting for its code to be exchanged.
type manifestReg struct {
	m       appManifest
	owner   string
	expires time.Time
}

// appManifest is the part of a manifest the fake checks and uses.
type appManifest struct {
	Name           string `json:"name"`
	URL            string `json:"url"`
	Description    string `json:"description"`
	RedirectURL    string `json:"redirect_url"`
	HookAttributes *struct {
		URL    string `json:"url"`
		Active *bool  `json:"active"`
	} `json:"hook_attributes"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

// ManifestRegistrations returns the codes registered and not yet exchanged.
func (f *Fake) ManifestRegistrations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.manifests)
}

// newAppFromManifest is the browser's POST of the manifest form (a web page
// on GitHub, not the REST API: it answers a redirect, or a plain-text error).
func (f *Fake) newAppFromManifest(c *rc) {
	form, err := url.ParseQuery(string(c.body))
	if err != nil {
		c.text(http.StatusBadRequest, "malformed form body")
		return
	}
	raw := form.Get("manifest")
	if raw == "" {
		c.text(http.StatusUnprocessableEntity, "the form has no manifest field")
		return
	}
	var m appManifest
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		c.text(http.StatusUnprocessableEntity, "the manifest is not JSON: "+err.Error())
		return
	}
	var problems []string
	if m.URL == "" {
		problems = append(problems, "url is required")
	}
	if m.HookAttributes != nil && m.HookAttributes.URL == "" {
		problems = append(problems, "hook_attributes.url is required")
	}
	for _, u := range []string{m.URL, m.RedirectURL} {
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			problems = append(problems, "not an absolute http(s) URL: "+u)
		}
	}
	if len(problems) > 0 {
		c.text(http.StatusUnprocessableEntity, "invalid manifest: "+strings.Join(problems, "; "))
		return
	}
	code := randomHex(20)
	if f.manifests == nil {
		f.manifests = map[string]*manifestReg{}
	}
	owner := c.param("org")
	if owner == "" {
		owner = "octocat" // the signed-in user of the browser
	}
	f.manifests[code] = &manifestReg{m: m, owner: owner, expires: f.now().Add(manifestTTL)}
	if m.RedirectURL == "" {
		// GitHub then shows the new App's page; the code is all a test needs.
		c.text(http.StatusCreated, code)
		return
	}
	to, _ := url.Parse(m.RedirectURL)
	q := to.Query()
	q.Set("code", code)
	if st := c.r.URL.Query().Get("state"); st != "" {
		q.Set("state", st)
	}
	to.RawQuery = q.Encode()
	c.hdr.Set("Location", to.String())
	c.text(http.StatusFound, "")
}

// convertManifest is POST /app-manifests/{code}/conversions: 201 with the
// App and its credentials; an unknown, used or expired code is 404.
func (f *Fake) convertManifest(c *rc) {
	code := c.param("code")
	reg, ok := f.manifests[code]
	if !ok || !f.now().Before(reg.expires) {
		delete(f.manifests, code)
		c.notFound()
		return
	}
	delete(f.manifests, code) // a code is good for one exchange
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		c.fail(http.StatusInternalServerError, "ghfake: generating the App key: "+err.Error())
		return
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	now := github.Timestamp{Time: f.now().UTC().Truncate(time.Second)}
	name := reg.m.Name
	if name == "" {
		name = f.opts.AppSlug
	}
	cfg := &github.AppConfig{
		ID: github.Int64(f.opts.AppID), Slug: github.String(f.opts.AppSlug), NodeID: nodeID("A", f.opts.AppID),
		Owner: f.userJSON(reg.owner), Name: github.String(name), Description: github.String(reg.m.Description),
		ExternalURL: github.String(reg.m.URL), HTMLURL: github.String(f.html("/apps/" + f.opts.AppSlug)),
		CreatedAt: &now, UpdatedAt: &now,
		ClientID:      github.String("Iv1." + randomHex(8)),
		ClientSecret:  github.String(randomHex(20)),
		WebhookSecret: github.String(randomHex(20)),
		PEM:           github.String(pemKey),
	}
	if h := reg.m.HookAttributes; h != nil && (h.Active == nil || *h.Active) {
		f.hookURL, f.hookSecret = h.URL, cfg.GetWebhookSecret()
	}
	c.json(http.StatusCreated, cfg)
}

// text answers a web page's plain-text body.
func (c *rc) text(status int, body string) {
	c.status = status
	c.hdr.Set("Content-Type", "text/plain; charset=utf-8")
	c.out = []byte(body)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
