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

// Reader is what the API's routes that read (and Jolokia's) ask of the broker;
// BrokerBackend implements it, tests may use a fake. Names are as clients write them:
// "/queue/X", "/topic/X". Errors are *broker.Error values whose Err is one of the
// broker's sentinels, mapped to HTTP statuses by statusOf.
type Reader interface {
	Overview() Overview
	// Destinations lists queues, topics and streams ("" all, or "queue", "topic",
	// "stream"), sorted by name. It never touches the store.
	Destinations(kind string) []Destination
	// Browse returns up to limit messages waiting on a queue, in dispatch order,
	// starting after the message id after ("" from the head); next is the id to pass
	// for the following page ("" at the end).
	Browse(ctx context.Context, queue string, after string, limit int) (msgs []Message, next string, err error)
	Message(ctx context.Context, queue, id string) (Message, error)
	Connections() []Connection
	DurableSubscriptions() []DurableSubscription
	// ClientIDOwners lists the client-ids users own (plugins.clientIdOwnership).
	ClientIDOwners() []ClientIDOwner
	Stream(name string) (Stream, error)
}

// Manager is what the API's routes that change state ask of the broker, on behalf of
// the operator its context names (IdentityOf). A Reader that is no Manager serves the
// reading routes only.
type Manager interface {
	DeleteMessage(ctx context.Context, queue, id string) error
	// Send sends a message to a destination as the admin user would over STOMP.
	Send(ctx context.Context, dest string, m SendRequest) (id string, err error)
	// Purge removes every message waiting on a queue (not those dispatched and not yet
	// acknowledged), atomically against the store: after a crash halfway the queue
	// holds either all of them or none.
	Purge(ctx context.Context, queue string) (int, error)
	// RemoveDestination deletes a queue or topic and its messages.
	RemoveDestination(ctx context.Context, dest string) error
	// Move moves (or with Copy copies) up to Limit messages of a queue matching
	// Selector to To, a destination or "original" (each message back to its
	// original-destination header: a dead-letter queue retried). Each message is
	// added to its target and removed from the source in one store batch: nothing is
	// lost or delivered twice if the broker dies halfway. A retry leaves, and lists in
	// Refused, each message whose producer (JMSXUserID) may not write its original
	// destination; the others go ahead.
	Move(ctx context.Context, queue string, r MoveRequest) (MoveResult, error)
	// CloseConnection closes a client connection; the client is told reason.
	CloseConnection(ctx context.Context, id, reason string) error
	RemoveDurableSubscription(ctx context.Context, clientID, name string) error
	// ImportDurable puts messages in one durable subscription's backlog only (a
	// migration), in one store batch; messages with a duplicate-detection id the
	// subscription already took are counted and dropped.
	ImportDurable(ctx context.Context, clientID, name string, msgs []SendRequest) (ImportResult, error)
	// FreeClientID frees a client-id its user owns: another user may connect with it.
	FreeClientID(ctx context.Context, clientID string) error
}

// apiRoute is one route of the API and its handler.
type apiRoute struct {
	pattern string
	handler http.HandlerFunc
}

// apiRoutes are the API's routes, in the order docs/api.md lists them: the GET ones
// read (Reader), the others change state (Manager).
func (s *Server) apiRoutes() []apiRoute {
	return []apiRoute{
		{"GET /api/broker", s.getBroker},
		{"GET /api/destinations", s.getDestinations},
		{"GET /api/queues/{name}/messages", s.browse},
		{"GET /api/queues/{name}/messages/{id}", s.getMessage},
		{"DELETE /api/queues/{name}/messages/{id}", s.deleteMessage},
		{"POST /api/queues/{name}/messages", s.send("/queue/")},
		{"POST /api/topics/{name}/messages", s.send("/topic/")},
		{"POST /api/queues/{name}/purge", s.purge},
		{"DELETE /api/queues/{name}", s.removeDestination("/queue/")},
		{"DELETE /api/topics/{name}", s.removeDestination("/topic/")},
		{"POST /api/queues/{name}/move", s.move},
		{"GET /api/connections", s.getConnections},
		{"DELETE /api/connections/{id}", s.closeConnection},
		{"GET /api/durable-subscriptions", s.getDurables},
		{"DELETE /api/durable-subscriptions/{clientId}/{name}", s.removeDurable},
		{"POST /api/durable-subscriptions/{clientId}/{name}/messages", s.importDurable},
		{"GET /api/client-ids", s.getClientIDs},
		{"DELETE /api/client-ids/{clientId}", s.freeClientID},
		{"GET /api/streams/{name}", s.getStream},
		{"GET /api/scheduled-jobs", s.getScheduled},
		{"DELETE /api/scheduled-jobs/{id}", s.removeScheduled},
		{"DELETE /api/scheduled-jobs", s.removeAllScheduled},
	}
}

// Browse page sizes: the default and the most one request may ask for.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// maxBodyBytes bounds a request body (a message sent through the API).
const maxBodyBytes = 16 << 20

// routeAPI mounts the routes the backend serves: those that change state only when it
// is a Manager.
func (s *Server) routeAPI() {
	for _, r := range s.apiRoutes() {
		if s.manage != nil || strings.HasPrefix(r.pattern, http.MethodGet+" ") {
			s.api.HandleFunc(r.pattern, r.handler)
			s.served = append(s.served, r.pattern)
		}
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

// statusOf maps an error of the broker (or of the request) to its HTTP status.
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
		err = s.manage.DeleteMessage(r.Context(), "/queue/"+name, r.PathValue("id"))
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
		id, err := s.manage.Send(r.Context(), prefix+name, req)
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
	n, err := s.manage.Purge(r.Context(), "/queue/"+name)
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
			err = s.manage.RemoveDestination(r.Context(), prefix+name)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// MoveResult is what a move returns: how many messages it moved, and those a retry
// left where they were, with why (the first 100; MoreRefused counts the others).
type MoveResult struct {
	Moved       int           `json:"moved"`
	Refused     []MoveRefusal `json:"refused,omitempty"`
	MoreRefused int           `json:"more_refused,omitempty"`
}

// MoveRefusal is a message a retry did not move, and why.
type MoveRefusal struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
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
	res, err := s.manage.Move(r.Context(), "/queue/"+name, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// writeList answers 200 with list in JSON, [] when it is nil.
func writeList[T any](w http.ResponseWriter, list []T) {
	if list == nil {
		list = []T{}
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) getConnections(w http.ResponseWriter, _ *http.Request) {
	writeList(w, s.o.Backend.Connections())
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
	if err := s.manage.CloseConnection(r.Context(), r.PathValue("id"), reason); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getDurables(w http.ResponseWriter, _ *http.Request) {
	writeList(w, s.o.Backend.DurableSubscriptions())
}

func (s *Server) removeDurable(w http.ResponseWriter, r *http.Request) {
	err := s.manage.RemoveDurableSubscription(r.Context(), r.PathValue("clientId"), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getClientIDs(w http.ResponseWriter, _ *http.Request) {
	writeList(w, s.o.Backend.ClientIDOwners())
}

func (s *Server) freeClientID(w http.ResponseWriter, r *http.Request) {
	if err := s.manage.FreeClientID(r.Context(), r.PathValue("clientId")); err != nil {
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
	res, err := s.manage.ImportDurable(r.Context(), r.PathValue("clientId"), r.PathValue("name"), req.Messages)
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

// StatsReporter is an optional power of a Reader: the report GET /stats returns
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
