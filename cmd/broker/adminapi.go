package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Defaults of the management commands.
const (
	defaultAdminURL = "http://127.0.0.1:8161"
	// envAdminURL stands for --admin (BROKER_ADMIN, its older name, is still read).
	envAdminURL    = "BROKERCTL_ADMIN"
	envAdminURLOld = "BROKER_ADMIN"
	// adminRequestTimeout bounds one request to the admin API.
	adminRequestTimeout = time.Minute
	// maxErrorBody is how much of an error response is read for its message.
	maxErrorBody = 64 << 10
)

// adminHelp is the part of the management commands' help that explains --admin.
const adminHelp = `
--admin is the broker's admin listener (broker.adminAddress), default $` + envAdminURL + `,
else ` + defaultAdminURL + `: http://user:pass@host:port (https too). With authentication
configured the user must be in an admin group (broker.adminGroups). Set
` + envAdminURL + ` to keep the password out of the command line, which ps shows.`

// adminFlags is the --admin flag of the management commands.
type adminFlags struct{ url string }

func (f *adminFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "admin", "", "admin API URL http://user:pass@host:port (default $"+envAdminURL+", else "+defaultAdminURL+")")
}

// client is the admin API client the flags say; its errors are usage errors.
func (f *adminFlags) client(fs *pflag.FlagSet) (*adminClient, error) {
	raw := f.url
	if !fs.Changed("admin") {
		raw = cmp.Or(fromEnv(envAdminURL, envAdminURLOld), defaultAdminURL)
	}
	c, err := newAdminClient(raw)
	return c, usageError(err)
}

// adminClient calls the admin listener's REST API (docs/api.md) with the JSON types of
// package admin.
type adminClient struct {
	base string // scheme://host:port[/prefix]: no credentials, no trailing slash
	user string
	pass string
	auth bool
	hc   *http.Client
}

// newAdminClient parses raw, an http or https URL with optional credentials. Its errors
// never hold the password.
func newAdminClient(raw string) (*adminClient, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("--admin: %w", err)
	}
	shown := strconv.Quote(u.Redacted())
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("--admin %s: write http://host:port or https://host:port", shown)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("--admin %s: no host", shown)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("--admin %s: no ?parameters or #fragment, only scheme, credentials, host, port and path", shown)
	}
	c := &adminClient{hc: &http.Client{Timeout: adminRequestTimeout}}
	if u.User != nil {
		c.auth = true
		c.user = u.User.Username()
		c.pass, _ = u.User.Password()
	}
	u.User = nil
	c.base = strings.TrimSuffix(u.String(), "/")
	return c, nil
}

// apiError is an error response of the admin API.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Status == http.StatusUnauthorized {
		s += " (give a user of an admin group: --admin http://user:pass@host:port or $" + envAdminURL + ")"
	}
	return s
}

// do sends method path (escaped already) with in as the JSON body (nil: none) and
// decodes a 2xx response into out (nil: discard).
func (c *adminClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth {
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fromCtx(ctx, err)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if strings.Contains(err.Error(), "malformed HTTP response") {
			// A STOMP port answers with an ERROR frame, an OpenWire one with binary.
			return fmt.Errorf("admin API at %s: that is not an HTTP server (a STOMP or OpenWire port?): --admin wants the admin listener's http://host:port (broker.adminAddress, default %s)", c.base, defaultAdminURL)
		}
		return fmt.Errorf("admin API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return responseError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("admin API at %s: %s %s: reading the answer: %w", c.base, method, path, err)
	}
	return nil
}

// responseError reads the message of an error response: the API's {"error": "..."},
// or the first line of a text body.
func responseError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &apiError{Status: resp.StatusCode}
	var j struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &j) == nil && j.Error != "" {
		e.Message = j.Error
	} else {
		e.Message, _, _ = strings.Cut(strings.TrimSpace(string(b)), "\n")
	}
	return e
}

// Destination kinds in the API.
const (
	kindQueue  = "queue"
	kindTopic  = "topic"
	kindStream = "stream"
)

// adminDest is a destination argument of a management command.
type adminDest struct {
	kind string // kindQueue or kindTopic; "" when the argument named no kind
	name string // without /queue/ or /topic/
}

// parseAdminDest reads /queue/X, /topic/X, queue://X, topic://X or a bare X.
func parseAdminDest(arg string) (adminDest, error) {
	for _, p := range []struct{ prefix, kind string }{
		{"/queue/", kindQueue}, {"/topic/", kindTopic}, {"queue://", kindQueue}, {"topic://", kindTopic},
	} {
		if name, ok := strings.CutPrefix(arg, p.prefix); ok {
			if name == "" {
				break
			}
			return adminDest{kind: p.kind, name: name}, nil
		}
	}
	if arg == "" || strings.HasPrefix(arg, "/") || strings.Contains(arg, "://") {
		return adminDest{}, usagef("destination %q: write /queue/NAME, /topic/NAME or NAME", arg)
	}
	return adminDest{name: arg}, nil
}

// String is the destination as clients write it.
func (d adminDest) String() string {
	if d.kind == "" {
		return d.name
	}
	return "/" + d.kind + "/" + d.name
}

// queue is d as a queue: a bare name is one; a topic is a usage error for what.
func (d adminDest) queue(what string) (adminDest, error) {
	switch d.kind {
	case kindQueue:
		return d, nil
	case "":
		return adminDest{kind: kindQueue, name: d.name}, nil
	}
	return d, usagef("%s %s: only a queue can be %s", what, d, pastTense(what))
}

func pastTense(verb string) string {
	if strings.HasSuffix(verb, "e") {
		return verb + "d"
	}
	return verb + "ed"
}

// path is the API path of d's collection item: /api/queues/NAME.
func (d adminDest) path() string {
	return "/api/" + d.kind + "s/" + url.PathEscape(d.name)
}
