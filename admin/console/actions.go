package console

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/admin"
)

// Manager is what the console's actions ask of the broker, on behalf of the operator
// their request's context names.
type Manager interface {
	Purge(ctx context.Context, queue string) (int, error)
	RemoveDestination(ctx context.Context, dest string) error
	Send(ctx context.Context, dest string, m admin.SendRequest) (string, error)
	Move(ctx context.Context, queue string, r admin.MoveRequest) (admin.MoveResult, error)
	DeleteMessage(ctx context.Context, queue, id string) error
	RemoveDurableSubscription(ctx context.Context, clientID, name string) error
	CloseConnection(ctx context.Context, id, reason string) error
}

// queuePage is the path of a queue's page.
func queuePage(dest string) string { return "/queues/" + url.PathEscape(shortName(dest)) }

// audit logs an action done from the console, with the user who did it.
func (c *Console) audit(r *http.Request, action string, attrs ...any) {
	slog.Info("console: "+action, append([]any{slog.String("user", c.s.User(r))}, attrs...)...)
}

func (c *Console) purgeQueue(w http.ResponseWriter, r *http.Request) {
	dest := queuePrefix + r.PathValue("name")
	n, err := c.b.Purge(r.Context(), dest)
	if err != nil {
		redirect(w, r, queuePage(dest), errorFlash("Purging %s failed: %v", shortName(dest), err))
		return
	}
	c.audit(r, "purged a queue", slog.String("dest", dest), slog.Int("messages", n))
	redirect(w, r, queuePage(dest), okFlash("Purged %s from %s.", plural(n, "message"), shortName(dest)))
}

func (c *Console) deleteQueue(w http.ResponseWriter, r *http.Request) {
	dest := queuePrefix + r.PathValue("name")
	if err := c.b.RemoveDestination(r.Context(), dest); err != nil {
		redirect(w, r, queuePage(dest), errorFlash("Deleting queue %s failed: %v", shortName(dest), err))
		return
	}
	c.audit(r, "deleted a queue", slog.String("dest", dest))
	// The queue's own page is gone: back to the list, whatever the form came from.
	setFlash(w, okFlash("Deleted queue %s.", shortName(dest)))
	http.Redirect(w, r, "/queues", http.StatusSeeOther)
}

func (c *Console) deleteTopic(w http.ResponseWriter, r *http.Request) {
	dest := topicPrefix + r.PathValue("name")
	if err := c.b.RemoveDestination(r.Context(), dest); err != nil {
		redirect(w, r, "/topics", errorFlash("Deleting topic %s failed: %v", shortName(dest), err))
		return
	}
	c.audit(r, "deleted a topic", slog.String("dest", dest))
	redirect(w, r, "/topics", okFlash("Deleted topic %s.", shortName(dest)))
}

// sendRequest reads the send form: body, headers (one "name: value" a line) and
// persistent.
func sendRequest(r *http.Request) (admin.SendRequest, error) {
	req := admin.SendRequest{Body: r.PostFormValue("body"), Persistent: r.PostFormValue("persistent") != ""}
	hs, err := parseHeaders(r.PostFormValue("headers"))
	if err != nil {
		return req, err
	}
	if len(hs) > 0 {
		req.Headers = hs
	}
	return req, nil
}

// parseHeaders reads "name: value" lines (or "name=value"); blank lines are skipped.
func parseHeaders(text string) (map[string]string, error) {
	hs := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		sep := strings.IndexAny(line, ":=")
		if sep < 0 {
			return nil, fmt.Errorf("header line %d (%q) is not name: value", i+1, line)
		}
		name := strings.TrimSpace(line[:sep])
		if name == "" {
			return nil, fmt.Errorf("header line %d (%q) has no name", i+1, line)
		}
		hs[name] = strings.TrimSpace(line[sep+1:])
	}
	return hs, nil
}

func (c *Console) sendQueue(w http.ResponseWriter, r *http.Request) {
	dest := queuePrefix + r.PathValue("name")
	c.send(w, r, dest, queuePage(dest))
}

func (c *Console) sendTopic(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.PostFormValue("topic")), topicPrefix))
	if name == "" {
		redirect(w, r, "/topics", errorFlash("Name the topic to send to."))
		return
	}
	c.send(w, r, topicPrefix+name, "/topics")
}

func (c *Console) send(w http.ResponseWriter, r *http.Request, dest, back string) {
	req, err := sendRequest(r)
	if err != nil {
		redirect(w, r, back, errorFlash("Not sent: %v", err))
		return
	}
	id, err := c.b.Send(r.Context(), dest, req)
	if err != nil {
		redirect(w, r, back, errorFlash("Sending to %s failed: %v", dest, err))
		return
	}
	c.audit(r, "sent a message", slog.String("dest", dest), slog.String("id", id))
	redirect(w, r, back, okFlash("Sent message %s to %s.", id, dest))
}

// moveTarget reads the form's "to": "original", a destination, or a bare name (a
// queue).
func moveTarget(r *http.Request) string {
	to := strings.TrimSpace(r.PostFormValue("to"))
	if to == "" || to == "original" || strings.HasPrefix(to, "/") {
		return to
	}
	return queuePrefix + to
}

// moveWords are the words of a move's flash message: "Moved"/"Moving", "Copied"/
// "Copying" or "Retried"/"Retrying", and where to ("to /queue/X", "to their original
// destinations").
func moveWords(req admin.MoveRequest) (done, doing, where string) {
	done, doing, where = "Moved", "Moving", "to "+req.To
	if req.To == "original" {
		done, doing, where = "Retried", "Retrying", "to their original destinations"
	}
	if req.Copy {
		done, doing = "Copied", "Copying"
	}
	return done, doing, where
}

func (c *Console) moveQueue(w http.ResponseWriter, r *http.Request) {
	dest := queuePrefix + r.PathValue("name")
	req := admin.MoveRequest{To: moveTarget(r), Selector: strings.TrimSpace(r.PostFormValue("selector")), Copy: r.PostFormValue("copy") != ""}
	if req.To == "" {
		redirect(w, r, queuePage(dest), errorFlash("Say where to move the messages: a destination such as /queue/NAME, or original."))
		return
	}
	if s := strings.TrimSpace(r.PostFormValue("limit")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			redirect(w, r, queuePage(dest), errorFlash("The limit %q is not a number of messages.", s))
			return
		}
		req.Limit = n
	}
	res, err := c.b.Move(r.Context(), dest, req)
	n := res.Moved
	done, doing, where := moveWords(req)
	if err != nil {
		redirect(w, r, queuePage(dest), errorFlash("%s messages of %s failed (%s done): %v", doing, shortName(dest), plural(n, "message"), err))
		return
	}
	c.audit(r, "moved messages", slog.String("dest", dest), slog.String("to", req.To), slog.String("selector", req.Selector), slog.Bool("copy", req.Copy), slog.Int("messages", n))
	if len(res.Refused) > 0 {
		redirect(w, r, queuePage(dest), errorFlash("%s %s %s. %s", done, plural(n, "message"), where, refusedText(res)))
		return
	}
	redirect(w, r, queuePage(dest), okFlash("%s %s %s.", done, plural(n, "message"), where))
}

// shownRefusals bounds the refused messages a flash names.
const shownRefusals = 5

// refusedText says which messages a retry left where they were, and why.
func refusedText(res admin.MoveResult) string {
	var b strings.Builder
	more := len(res.Refused) + res.MoreRefused
	fmt.Fprintf(&b, "%s not moved:", plural(more, "message"))
	for i, f := range res.Refused {
		if i == shownRefusals {
			break
		}
		fmt.Fprintf(&b, " %s: %s.", f.ID, f.Reason)
		more--
	}
	if more > 0 {
		fmt.Fprintf(&b, " And %s more.", plural(more, "message"))
	}
	return b.String()
}

// messageSelector selects the message whose id is id.
func messageSelector(id string) string {
	return "JMSMessageID = '" + strings.ReplaceAll(id, "'", "''") + "'"
}

func (c *Console) moveMessage(w http.ResponseWriter, r *http.Request) {
	dest, id := queuePrefix+r.PathValue("name"), r.PathValue("id")
	req := admin.MoveRequest{To: moveTarget(r), Selector: messageSelector(id), Limit: 1, Copy: r.PostFormValue("copy") != ""}
	back := queuePage(dest) + "/messages/" + url.PathEscape(id)
	if req.To == "" {
		redirect(w, r, back, errorFlash("Say where to move the message: a destination such as /queue/NAME, or original."))
		return
	}
	res, err := c.b.Move(r.Context(), dest, req)
	switch {
	case err != nil:
		redirect(w, r, back, errorFlash("Moving message %s failed: %v", id, err))
		return
	case len(res.Refused) > 0:
		redirect(w, r, back, errorFlash("Message %s was not moved: %s.", id, res.Refused[0].Reason))
		return
	case res.Moved == 0:
		redirect(w, r, back, errorFlash("Message %s was not moved: it is no longer waiting on %s.", id, shortName(dest)))
		return
	}
	c.audit(r, "moved a message", slog.String("dest", dest), slog.String("id", id), slog.String("to", req.To), slog.Bool("copy", req.Copy))
	done, _, where := moveWords(req)
	if req.To == "original" {
		where = "to its original destination"
	}
	// The message has left the queue unless it was copied: its page is gone.
	fallback := back
	if !req.Copy {
		fallback = queuePage(dest)
	}
	redirect(w, r, fallback, okFlash("%s message %s %s.", done, id, where))
}

func (c *Console) deleteMessage(w http.ResponseWriter, r *http.Request) {
	dest, id := queuePrefix+r.PathValue("name"), r.PathValue("id")
	if err := c.b.DeleteMessage(r.Context(), dest, id); err != nil {
		redirect(w, r, queuePage(dest), errorFlash("Deleting message %s failed: %v", id, err))
		return
	}
	c.audit(r, "deleted a message", slog.String("dest", dest), slog.String("id", id))
	redirect(w, r, queuePage(dest), okFlash("Deleted message %s.", id))
}

func (c *Console) deleteDurable(w http.ResponseWriter, r *http.Request) {
	clientID, name := r.PathValue("clientId"), r.PathValue("name")
	if err := c.b.RemoveDurableSubscription(r.Context(), clientID, name); err != nil {
		redirect(w, r, "/durable", errorFlash("Removing durable subscription %s of %s failed: %v", name, clientID, err))
		return
	}
	c.audit(r, "removed a durable subscription", slog.String("client_id", clientID), slog.String("name", name))
	redirect(w, r, "/durable", okFlash("Removed durable subscription %s of %s.", name, clientID))
}

func (c *Console) closeConnection(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if reason == "" {
		reason = "closed by an administrator"
	}
	if err := c.b.CloseConnection(r.Context(), id, reason); err != nil {
		redirect(w, r, "/connections", errorFlash("Closing connection %s failed: %v", id, err))
		return
	}
	c.audit(r, "closed a connection", slog.String("id", id), slog.String("reason", reason))
	redirect(w, r, "/connections", okFlash("Closed connection %s (%s).", id, reason))
}
