package gateway

import (
	"encoding/json"
	"net/http"
)

// Refusals are answered in the shape of the provider the client speaks, so its CLI reports them as the API's own
// errors (and does not retry them: none of the statuses below is one the providers' SDKs retry, except OpenAI's
// 429, whose insufficient_quota code codex and the OpenAI SDKs treat as final).

// errorKind is why the gateway refuses a request.
type errorKind int

const (
	errAuth      errorKind = iota // no or a bad gateway token
	errBudget                     // a cost limit is reached
	errBadReq                     // a request the gateway cannot meter or does not forward
	errNotFound                   // a path the gateway does not forward
	errUpstream                   // the upstream could not be reached
	errForbidden                  // a request the gateway will not forward (unmeterable)
)

// writeError answers in p's error format. https://docs.anthropic.com/en/api/errors,
// https://platform.openai.com/docs/guides/error-codes, https://ai.google.dev/gemini-api/docs/troubleshooting.
func writeError(w http.ResponseWriter, up Upstream, kind errorKind, msg string) {
	status := map[errorKind]int{errAuth: 401, errBudget: 402, errBadReq: 400, errNotFound: 404, errUpstream: 502, errForbidden: 403}[kind]
	var body any
	switch up {
	case UpstreamOpenAI:
		tc := map[errorKind][2]string{
			errAuth:      {"invalid_request_error", "invalid_api_key"},
			errBudget:    {"insufficient_quota", "insufficient_quota"},
			errBadReq:    {"invalid_request_error", ""},
			errNotFound:  {"invalid_request_error", ""},
			errUpstream:  {"server_error", ""},
			errForbidden: {"invalid_request_error", ""},
		}[kind]
		typ, code := tc[0], tc[1]
		if kind == errBudget {
			status = http.StatusTooManyRequests // OpenAI's status for an exhausted quota
		}
		e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
		if code != "" {
			e["code"] = code
		}
		body = map[string]any{"error": e}
	case UpstreamGemini:
		st := map[errorKind]string{errAuth: "UNAUTHENTICATED", errBudget: "PERMISSION_DENIED", errBadReq: "INVALID_ARGUMENT",
			errNotFound: "NOT_FOUND", errUpstream: "UNAVAILABLE", errForbidden: "PERMISSION_DENIED"}[kind]
		if kind == errBudget {
			status = http.StatusForbidden // Gemini's quota status (429) is retried by the gemini CLI; 403 is final
		}
		body = map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}}
	default: // Anthropic, and paths of no known provider
		typ := map[errorKind]string{errAuth: "authentication_error", errBudget: "billing_error", errBadReq: "invalid_request_error",
			errNotFound: "not_found_error", errUpstream: "api_error", errForbidden: "permission_error"}[kind]
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
