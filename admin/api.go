package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/broker"
)

// The REST API (docs/api.md). Destination names in paths are without /queue/ or
// /topic/, path-escaped ("a%2Fb" for a/b). Errors are {"error": "..."} with 400 (a bad
// request), 401 and 403 (guard), 404 (no such destination, message, connection,
// durable subscription or stream), 409 (in use) or 500.

// apiRoutes are the API's routes, in the order docs/api.md lists them.
var apiRoutes = []string{
	"GET /api/broker",
	"GET /api/destinations",
	"GET /api/queues/{name}/messages",
	"GET /api/queues/{name}/messages/{id}",
	"DELETE /api/queues/{name}/messages/{id}",
	"POST /api/queues/{name}/messages",
	"POST /api/topics/{name}/messages",
	"POST /api/queues/{name}/purge",
	"DELETE /api/queues/{name}",
	"DELETE /api/topics/{name}",
	"POST /api/queues/{name}/move",
	"GET /api/connections",
	"DELETE /api/connections/{id}",
	"GET /api/durable-subscriptions",
	"DELETE /api/durable-subscriptions/{clientId}/{name}",
	"POST /api/durable-subscriptions/{clientId}/{name}/messages",
	"GET /api/streams/{name}",
}

// Browse page sizes: the default and the most one request may ask for.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// maxBodyBytes bounds a request body (a message sent through the API).
const maxBodyBytes = 16 << 20

func (s *Server) routeAPI() {
	handlers := map[string]http.HandlerFunc{
		"GET /api/broker":                                            s.getBroker,
		"GET /api/destinations":                                      s.getDestinations,
		"GET /api/queues/{name}/messages":                            s.browse,
		"GET /api/queues/{name}/messages/{id}":                       s.getMessage,
		"DELETE /api/queues/{name}/messages/{id}":                    s.deleteMessage,
		"POST /api/queues/{name}/messages":                           s.send("/queue/"),
		"POST /api/topics/{name}/messages":                           s.send("/topic/"),
		"POST /api/queues/{name}/purge":                              s.purge,
		"DELETE /api/queues/{name}":                                  s.removeDestination("/queue/"),
		"DELETE /api/topics/{name}":                                  s.removeDestination("/topic/"),
		"POST /api/queues/{name}/move":                               s.move,
		"GET /api/connections":                                       s.getConnections,
		"DELETE /api/connections/{id}":                               s.closeConnection,
		"GET /api/durable-subscriptions":                             s.getDurables,
		"DELETE /api/durable-subscriptions/{clientId}/{name}":        s.removeDurable,
		"POST /api/durable-subscriptions/{clientId}/{name}/messages": s.importDurable,
		"GET /api/streams/{name}":                                    s.getStream,
	}
	for _, p := range apiRoutes {
		s.api.HandleFunc(p, handlers[p])
	}
	s.api.HandleFunc("/api/", s.noRoute)
}

// noRoute answers a request no API route takes: 405 when another method would do.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.api.Handler(probe); pattern != "/api/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	writeError(w, http.StatusNotFound, "no such API route: "+r.Method+" "+r.URL.Path+" (see docs/api.md)")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// errBadRequest marks a request the API refuses before asking the broker.
var errBadRequest = errors.New("admin: bad request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}

// statusOf maps an error of the Backend (or of the request) to its HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, errBadRequest),
		errors.Is(err, broker.ErrInvalidDestination),
		errors.Is(err, broker.ErrInvalidSelector),
		errors.Is(err, broker.ErrInvalidStreamOffset):
		return http.StatusBadRequest
	case errors.Is(err, broker.ErrNotFound), errors.Is(err, broker.ErrNoCursor):
		return http.StatusNotFound
	case errors.Is(err, broker.ErrDestinationInUse), errors.Is(err, broker.ErrDurableInUse):
		return http.StatusConflict
	case errors.Is(err, broker.ErrNotAuthorized):
		return http.StatusForbidden
	case errors.Is(err, broker.ErrTooManyDestinations), errors.Is(err, broker.ErrStoreFull), errors.Is(err, broker.ErrMemoryFull):
		return http.StatusServiceUnavailable
	}
	var be *broker.Error
	if errors.As(err, &be) && be.Err == nil {
		return http.StatusBadRequest // a request the broker refused as a client's
	}
	return http.StatusInternalServerError
}

// fail answers a failed request.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	msg := err.Error()
	var be *broker.Error
	if errors.As(err, &be) {
		msg = be.Message
	} else if errors.Is(err, errBadRequest) {
		msg = strings.TrimPrefix(msg, errBadRequest.Error()+": ")
	}
	if status == http.StatusInternalServerError {
		s.log.Error("admin request failed", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("err", err))
	}
	writeError(w, status, msg)
}

// decode reads a JSON request body into v, refusing unknown fields.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeUpTo(w, r, v, maxBodyBytes)
}

// decodeUpTo is decode of a body of at most limit bytes.
func decodeUpTo(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	body := http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return badRequest("the request body must be a JSON object")
		}
		return badRequest("bad JSON body: %v", err)
	}
	if dec.More() {
		return badRequest("bad JSON body: more than one value")
	}
	return nil
}

// pathName is the destination name of a path: not empty.
func pathName(r *http.Request, key string) (string, error) {
	v := r.PathValue(key)
	if v == "" {
		return "", badRequest("empty %s in the path", key)
	}
	return v, nil
}

func (s *Server) getBroker(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.o.Backend.Overview())
}

func (s *Server) getDestinations(w http.ResponseWriter, r *http.Request) {
	kind := r.URL.Query().Get("type")
	switch kind {
	case "", "queue", "topic", "stream":
	default:
		s.fail(w, r, badRequest("type %q: use queue, topic or stream", kind))
		return
	}
	ds := s.o.Backend.Destinations(kind)
	if ds == nil {
		ds = []Destination{}
	}
	writeJSON(w, http.StatusOK, ds)
}

// BrowsePage is what GET /api/queues/{name}/messages returns.
type BrowsePage struct {
	Messages []Message `json:"messages"`
	// Next is the id to pass as after for the following page; "" at the end.
	Next string `json:"next"`
}

func (s *Server) browse(w http.ResponseWriter, r *http.Request) {
	name, err := pathName(r, "name")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit := DefaultPageSize
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			s.fail(w, r, badRequest("limit %q: a number from 1 to %d", v, MaxPageSize))
			return
		}
		limit = n
	}
	msgs, next, err := s.o.Backend.Browse(r.Context(), "/queue/"+name, r.URL.Query().Get("after"), limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if msgs == nil {
		msgs = []Message{}
	}
	writeJSON(w, http.StatusOK, BrowsePage{Messages: msgs, Next: next})
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	name, err := pathName(r, "name")
	if err == nil {
		var m Message
		if m, err = s.o.Backend.Message(r.Context(), "/queue/"+name, r.PathValue("id")); err == nil {
			writeJSON(w, http.StatusOK, m)
			return
		}
	}
	s.fail(w, r, err)
}

func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request) {
	name, err := pathName(r, "name")
	if err == nil {
		err = s.o.Backend.DeleteMessage(r.Context(), "/queue/"+name, r.PathValue("id"))
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// SendResult is what a send returns.
type SendResult struct {
	ID string `json:"id"`
}

func (s *Server) send(prefix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, err := pathName(r, "name")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		var req SendRequest
		if err := decode(w, r, &req); err != nil {
			s.fail(w, r, err)
			return
		}
		id, err := s.o.Backend.Send(r.Context(), prefix+name, req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, SendResult{ID: id})
	}
}

// PurgeResult is what a purge returns.
type PurgeResult struct {
	Purged int `json:"purged"`
}

func (s *Server) purge(w http.ResponseWriter, r *http.Request) {
	name, err := pathName(r, "name")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := s.o.Backend.Purge(r.Context(), "/queue/"+name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, PurgeResult{Purged: n})
}

func (s *Server) removeDestination(prefix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, err := pathName(r, "name")
		if err == nil {
			err = s.o.Backend.RemoveDestination(r.Context(), prefix+name)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// MoveResult is what a move returns.
type MoveResult struct {
	Moved int `json:"moved"`
}

func (s *Server) move(w http.ResponseWriter, r *http.Request) {
	name, err := pathName(r, "name")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req MoveRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.To == "" {
		s.fail(w, r, badRequest(`"to" is missing: a destination (/queue/X, /topic/X) or "original"`))
		return
	}
	if req.Limit < 0 {
		s.fail(w, r, badRequest(`"limit" is negative: 0 for all`))
		return
	}
	n, err := s.o.Backend.Move(r.Context(), "/queue/"+name, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, MoveResult{Moved: n})
}

func (s *Server) getConnections(w http.ResponseWriter, _ *http.Request) {
	cs := s.o.Backend.Connections()
	if cs == nil {
		cs = []Connection{}
	}
	writeJSON(w, http.StatusOK, cs)
}

// closeConnection closes a connection; the reason (query parameter reason, or the
// X-Reason header as RabbitMQ's API takes it) is what the client's ERROR says.
func (s *Server) closeConnection(w http.ResponseWriter, r *http.Request) {
	reason := r.URL.Query().Get("reason")
	if reason == "" {
		reason = r.Header.Get("X-Reason")
	}
	if reason == "" {
		reason = "connection closed by an administrator"
	}
	if err := CloseConnection(r.Context(), s.o.Backend, r.PathValue("id"), reason); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getDurables(w http.ResponseWriter, _ *http.Request) {
	ds := s.o.Backend.DurableSubscriptions()
	if ds == nil {
		ds = []DurableSubscription{}
	}
	writeJSON(w, http.StatusOK, ds)
}

func (s *Server) removeDurable(w http.ResponseWriter, r *http.Request) {
	err := s.o.Backend.RemoveDurableSubscription(r.Context(), r.PathValue("clientId"), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// maxImportMessages and maxImportBytes bound one import request (broker migrate sends
// batches of at most 4 MiB of bodies, or one larger message).
const (
	maxImportMessages = 10000
	maxImportBytes    = 64 << 20
)

func (s *Server) importDurable(w http.ResponseWriter, r *http.Request) {
	var req ImportRequest
	if err := decodeUpTo(w, r, &req, maxImportBytes); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(req.Messages) > maxImportMessages {
		s.fail(w, r, badRequest("%d messages in one import: at most %d", len(req.Messages), maxImportMessages))
		return
	}
	res, err := s.o.Backend.ImportDurable(r.Context(), r.PathValue("clientId"), r.PathValue("name"), req.Messages)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) getStream(w http.ResponseWriter, r *http.Request) {
	name, err := pathName(r, "name")
	if err == nil {
		var st Stream
		if st, err = s.o.Backend.Stream(name); err == nil {
			writeJSON(w, http.StatusOK, st)
			return
		}
	}
	s.fail(w, r, err)
}

// StatsReporter is an optional power of a Backend: the report GET /stats returns
// (destinations, durable subscriptions, memory, the store's files, security counters).
type StatsReporter interface {
	StatsReport() any
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	sr, ok := s.o.Backend.(StatsReporter)
	if !ok {
		writeError(w, http.StatusNotFound, "no stats report")
		return
	}
	writeJSON(w, http.StatusOK, sr.StatsReport())
}

// ConnectionCloser is an optional power of a Backend: CloseConnection with the
// request's context, which names the operator (IdentityOf) for the broker's log.
type ConnectionCloser interface {
	CloseConnectionContext(ctx context.Context, id, reason string) error
}

// CloseConnection closes a connection through be, with ctx when be can take it: what
// the API and the console call.
func CloseConnection(ctx context.Context, be Backend, id, reason string) error {
	if cc, ok := be.(ConnectionCloser); ok {
		return cc.CloseConnectionContext(ctx, id, reason)
	}
	return be.CloseConnection(id, reason)
}
