package ghfake

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
)

// Transport returns an http.RoundTripper that hands requests for the
// fake's URL to its handler in-process, without a TCP connection: tests
// that make thousands of API calls (the bot's fault sweep) spend their time
// in the code under test rather than in loopback sockets. Requests for any
// other host go to http.DefaultTransport. The handler sees the request as
// the server would (same path, headers, Host, a loopback RemoteAddr), so
// answers are the same as over TCP. Streaming is not modelled: the
// response is complete when RoundTrip returns, which the REST API never
// needs (git's smart HTTP goes over TCP, see URL).
func (f *Fake) Transport() http.RoundTripper { return inProcess{f} }

type inProcess struct{ f *Fake }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.f.srv.URL // "http://127.0.0.1:port"
	if req.URL == nil || req.URL.Scheme+"://"+req.URL.Host != base {
		return http.DefaultTransport.RoundTrip(req)
	}
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("ghfake: reading request body: %w", err)
		}
		body = b
	}
	sreq := req.Clone(req.Context())
	sreq.URL.Scheme, sreq.URL.Host = "", ""
	sreq.RequestURI = req.URL.RequestURI()
	sreq.Host = req.URL.Host
	sreq.RemoteAddr = "127.0.0.1:1"
	sreq.Body = io.NopCloser(bytes.NewReader(body))
	sreq.ContentLength = int64(len(body))
	sreq.Proto, sreq.ProtoMajor, sreq.ProtoMinor = "HTTP/1.1", 1, 1
	if sreq.Header == nil {
		sreq.Header = http.Header{}
	}
	rec := &hijackableRecorder{ResponseRecorder: httptest.NewRecorder()}
	t.f.serveHTTP(rec, sreq)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	if rec.hijacked {
		// What a client sees when the server drops the connection.
		return nil, fmt.Errorf("ghfake: in-process %s %s: %w", req.Method, req.URL.Path, io.ErrUnexpectedEOF)
	}
	resp := rec.Result()
	resp.Request = req
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	if resp.ContentLength < 0 {
		resp.ContentLength = int64(rec.Body.Len())
	}
	if req.Method == http.MethodHead {
		resp.Body = io.NopCloser(strings.NewReader(""))
	}
	return resp, nil
}

// hijackableRecorder lets a fault drop "the connection" (FaultTimeout with
// Hold hijacks and closes it).
type hijackableRecorder struct {
	*httptest.ResponseRecorder
	hijacked bool
}

func (r *hijackableRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.hijacked = true
	a, b := net.Pipe()
	_ = b.Close()
	return a, bufio.NewReadWriter(bufio.NewReader(a), bufio.NewWriter(a)), nil
}

// inProcessHookHost is the webhook URL's host when deliveries go to an
// in-process handler (SetWebhookHandler).
const inProcessHookHost = "ghfake-hook.invalid"

// SetWebhookHandler is SetWebhook for a receiver in the same process:
// deliveries (signed with secret, with every header GitHub sends) are
// handed to h without a TCP connection.
func (f *Fake) SetWebhookHandler(h http.Handler, secret string) {
	f.mu.Lock()
	f.hookHandler = h
	f.mu.Unlock()
	f.SetWebhook("http://"+inProcessHookHost+"/", secret)
}

// hookTransport delivers to the in-process webhook handler, and anywhere
// else over the network.
type hookTransport struct{ f *Fake }

func (t hookTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != inProcessHookHost {
		return http.DefaultTransport.RoundTrip(req)
	}
	t.f.mu.Lock()
	h := t.f.hookHandler
	t.f.mu.Unlock()
	if h == nil {
		return nil, fmt.Errorf("ghfake: no in-process webhook handler")
	}
	sreq := req.Clone(req.Context())
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "127.0.0.1:1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, sreq)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}
