// Package ghapi is the slice of GitHub's REST API that bazinga calls, in its
// own types: the go-github adapter (Client), the App's client factory
// (installation and App tokens through ghinstallation) and the transport
// chain below every client (ETag cache, rate-limit and retry handling, call
// counting). Consumers declare the small interfaces they need over Client's
// methods; no go-github type leaves this package except from the factory.
package ghapi
