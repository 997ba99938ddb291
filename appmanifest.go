package bazinga

import _ "embed"

// AppManifest is app.yml, the GitHub App manifest: `bazinga serve`'s setup
// page registers the App from it (GitHub's manifest flow).
//
//go:embed app.yml
var AppManifest []byte
