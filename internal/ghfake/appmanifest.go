package ghfake

import (
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// AppPermissions reads the default_permissions of a GitHub App manifest
// file (app.yml): what an installation token of that App carries, and all it
// carries. Tests register the App's token with them (AddTokenWithPermissions)
// so that the fake refuses what GitHub would refuse the real App.
func AppPermissions(manifestPath string) (map[string]string, error) {
	b, err := os.ReadFile(manifestPath)
	if err != nil {
		return nil, fmt.Errorf("ghfake: reading the App manifest: %w", err)
	}
	var m struct {
		DefaultPermissions map[string]string `yaml:"default_permissions"`
	}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("ghfake: %s: %w", manifestPath, err)
	}
	if len(m.DefaultPermissions) == 0 {
		return nil, fmt.Errorf("ghfake: %s has no default_permissions", manifestPath)
	}
	for k, v := range m.DefaultPermissions {
		if v != "read" && v != "write" && v != "admin" {
			return nil, fmt.Errorf("ghfake: %s: permission %s is %q; it must be read, write or admin", manifestPath, k, v)
		}
	}
	return m.DefaultPermissions, nil
}

// AddAppToken registers tok as an installation token of the fake's App
// (its bot login) with exactly the permissions of the manifest at
// manifestPath.
func (f *Fake) AddAppToken(tok, manifestPath string) error {
	perms, err := AppPermissions(manifestPath)
	if err != nil {
		return err
	}
	f.AddTokenWithPermissions(tok, f.BotLogin(), Bot, perms)
	return nil
}
