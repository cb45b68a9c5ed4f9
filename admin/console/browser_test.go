package console

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/admin"
	"github.com/activemq-go/broker/internal/browsertest"
)

// The browser tests run the console in a real headless Chromium (one per test
// binary, a tab per test), under the Content-Security-Policy the console sends.

func TestMain(m *testing.M) { os.Exit(browsertest.Run(m)) }

// newTab opens a tab of the test binary's browser.
func newTab(t testing.TB) *browsertest.Tab { return browsertest.Shared(t).NewTab(t) }

// eval evaluates a JavaScript expression in the tab's page.
func eval[T any](tb *browsertest.Tab, expr string) T { return browsertest.Eval[T](tb, expr) }

// TestBrowserOverview: the overview lists every queue with its size, flags the
// dead-letter queue that holds messages, and shows the broker's figures.
func TestBrowserOverview(t *testing.T) {
	e := newEnv(t)
	tb := newTab(t)
	tb.Open(e.url("/"))

	names := eval[[]string](tb, `[...document.querySelectorAll("table.queues tr[data-queue]")].map(r => r.dataset.queue)`)
	var want []string
	for _, d := range e.f.Destinations("queue") {
		want = append(want, shortName(d.Name))
	}
	require.Equal(t, want, names, "every queue, in order")
	require.Equal(t, "3", tb.Text(`tr[data-queue="orders"] td.size`))
	require.Equal(t, "60", tb.Text(`tr[data-queue="invoices.render"] td.size`))
	require.True(t, eval[bool](tb, `document.querySelector('tr[data-queue="ActiveMQ.DLQ"]').classList.contains("row-dlq")`), "the DLQ row is highlighted")
	require.True(t, eval[bool](tb, `document.querySelector('tr[data-queue="invoices.render"]').classList.contains("row-stuck")`), "a queue with messages and no consumer is marked")
	alert := tb.Text("#dlq-alert")
	require.Contains(t, alert, "ActiveMQ.DLQ")
	require.Contains(t, alert, "3 messages")
	require.Equal(t, "4", tb.Text("#connections"))
	require.Equal(t, "78", tb.Text("#waiting"))
	require.Equal(t, "–", tb.Text("#rate-in"), "no rate before a second sample")
	require.Contains(t, tb.Text("main"), "broker-eu-1")
	require.Equal(t, int64(412<<20), eval[int64](tb, `document.querySelector("#memory").value`))
}

// TestBrowserBrowseAndMessage: from the queue list to a queue, its messages in pages,
// and one message with its headers and body.
func TestBrowserBrowseAndMessage(t *testing.T) {
	e := newEnv(t)
	tb := newTab(t)
	tb.Open(e.url("/queues"))
	tb.Submit(`tr[data-queue="invoices.render"] td.name a`)
	require.Equal(t, "invoices.render", tb.Text("#queue-name"))
	ids := e.f.ids("invoices.render")
	rows := eval[[]string](tb, `[...document.querySelectorAll("table.messages tr[data-id]")].map(r => r.dataset.id)`)
	require.Equal(t, ids[:defaultBrowse], rows, "the first page")

	tb.Submit("#next-page")
	rows = eval[[]string](tb, `[...document.querySelectorAll("table.messages tr[data-id]")].map(r => r.dataset.id)`)
	require.Equal(t, ids[defaultBrowse:2*defaultBrowse], rows, "the second page, after the cursor")
	tb.Submit("#next-page")
	rows = eval[[]string](tb, `[...document.querySelectorAll("table.messages tr[data-id]")].map(r => r.dataset.id)`)
	require.Equal(t, ids[2*defaultBrowse:], rows, "the last page")
	require.False(t, eval[bool](tb, `!!document.querySelector("#next-page")`), "no next page after the last")

	tb.Open(e.url("/queues/orders"))
	id := e.f.ids("orders")[1]
	tb.Submit(`tr[data-id="` + id + `"] a`)
	require.Equal(t, id, tb.Text("#message-id"))
	m, err := e.f.Message(context.Background(), "/queue/orders", id)
	require.NoError(t, err)
	require.Equal(t, m.Body, eval[string](tb, `document.querySelector("#body").textContent`))
	hs := eval[map[string]string](tb, `Object.fromEntries([...document.querySelectorAll("table.headers tbody tr")].map(r => [r.cells[0].textContent, r.cells[1].textContent]))`)
	require.Equal(t, m.Headers, hs)
}

// TestBrowserSendFromForm: the send form of a queue sends a message with its body,
// headers and persistence, and the page says so.
func TestBrowserSendFromForm(t *testing.T) {
	e := newEnv(t)
	tb := newTab(t)
	tb.Open(e.url("/queues/orders"))
	tb.SetValue("#send-body", `{"order": 99001, "note": "sent from the console"}`)
	tb.SetValue("#send-headers", "content-type: application/json\ntenant: eu\n")
	tb.Submit("#send-button")

	sent := e.f.Sent()
	require.Len(t, sent, 1)
	require.Equal(t, "/queue/orders", sent[0].Dest)
	require.Equal(t, `{"order": 99001, "note": "sent from the console"}`, sent[0].Req.Body)
	require.Equal(t, map[string]string{"content-type": "application/json", "tenant": "eu"}, sent[0].Req.Headers)
	require.True(t, sent[0].Req.Persistent)
	flash := tb.Text("#flash")
	require.Contains(t, flash, "Sent message ID:test-")
	require.Equal(t, "4", tb.Text("#queue-size"))

	// A topic, from the topics page.
	tb.Open(e.url("/topics"))
	tb.SetValue("#send-topic", "prices.eur")
	tb.SetValue("#send-body", "tick")
	tb.Submit("#send-button")
	sent = e.f.Sent()
	require.Len(t, sent, 2)
	require.Equal(t, "/topic/prices.eur", sent[1].Dest)
	require.Contains(t, tb.Text("#flash"), "/topic/prices.eur")

	// A header line that is not name: value is refused, nothing is sent.
	tb.Open(e.url("/queues/orders"))
	tb.SetValue("#send-body", "x")
	tb.SetValue("#send-headers", "no separator here")
	tb.Submit("#send-button")
	require.Len(t, e.f.Sent(), 2)
	require.Contains(t, tb.Text(".flash-error"), "not name: value")
}

// TestBrowserRetryDLQ: a dead letter goes back to its original destination, one from
// its row, one from its own page, and the rest with "Retry all".
func TestBrowserRetryDLQ(t *testing.T) {
	e := newEnv(t)
	tb := newTab(t)
	dlq := e.f.ids("ActiveMQ.DLQ")
	require.Len(t, dlq, 3)
	ordersBefore := len(e.f.ids("orders"))

	tb.Open(e.url("/queues/ActiveMQ.DLQ"))
	tb.Submit(`tr[data-id="` + dlq[0] + `"] form.retry button`)
	require.Contains(t, tb.Text("#flash"), "Retried message "+dlq[0]+" to its original destination")
	moves := e.f.Moves()
	require.Len(t, moves, 1)
	require.Equal(t, moveCall{Queue: "/queue/ActiveMQ.DLQ", Req: admin.MoveRequest{To: "original", Selector: "JMSMessageID = '" + dlq[0] + "'", Limit: 1}}, moves[0])
	require.Equal(t, dlq[1:], e.f.ids("ActiveMQ.DLQ"))
	require.Equal(t, ordersBefore+1, len(e.f.ids("orders")), "back on orders")
	require.Contains(t, e.f.ids("orders"), dlq[0])

	tb.Open(e.url("/queues/ActiveMQ.DLQ/messages/" + dlq[1]))
	require.Contains(t, tb.Text("#retry"), "/queue/payments")
	tb.Submit("#retry button")
	require.Contains(t, tb.Text("#flash"), "Retried message "+dlq[1])
	require.Contains(t, e.f.ids("payments"), dlq[1])

	tb.Submit("#retry-all button")
	require.Contains(t, tb.WaitDialog(), "back to their original destinations")
	require.Contains(t, tb.Text("#flash"), "Retried 1 message to their original destinations")
	require.Equal(t, "original", e.f.Moves()[2].Req.To)
	require.Empty(t, e.f.Moves()[2].Req.Selector)
	require.Empty(t, e.f.ids("ActiveMQ.DLQ"))
	require.Equal(t, "0", tb.Text("#queue-size"))
}

// TestBrowserPurgeConfirmation: Purge asks first; dismissed, nothing happens;
// accepted, the queue is purged once.
func TestBrowserPurgeConfirmation(t *testing.T) {
	e := newEnv(t)
	tb := newTab(t)
	tb.Open(e.url("/queues"))

	tb.AcceptDialogs(false)
	tb.Click(`tr[data-queue="orders"] form.purge button`)
	require.Contains(t, tb.WaitDialog(), "Purge all 3 waiting messages of queue orders?")
	require.Equal(t, "3", tb.Text(`tr[data-queue="orders"] td.size`), "still the queue page, nothing purged")

	tb.AcceptDialogs(true)
	tb.Submit(`tr[data-queue="orders"] form.purge button`)
	require.Contains(t, tb.WaitDialog(), "Purge all 3")
	require.Equal(t, "Purged 3 messages from orders.", tb.Text("#flash"))
	require.Equal(t, []string{"/queue/orders"}, e.f.Purges(), "one purge: the dismissed one never left the browser")
	require.Equal(t, "0", tb.Text(`tr[data-queue="orders"] td.size`))
	require.True(t, strings.HasSuffix(tb.Location(), "/queues"), "back on the list: %s", tb.Location())
}

// TestBrowserScriptsAreText: names, headers and bodies holding markup are shown as
// text; none of it runs or becomes an element.
func TestBrowserScriptsAreText(t *testing.T) {
	e := newEnv(t)
	const evil = `<script>window.__xss = 1; alert(1)</script><img src=x onerror="window.__xss = 2">`
	queue := `x"><script>window.__xss=3</script>`
	m := e.f.put(queue, `ID:<b>bold</b>'"`, evil+" and more", map[string]string{"note": evil, evil: "name"})
	e.f.put("orders", "", evil, nil)
	e.f.mu.Lock()
	e.f.conns = append(e.f.conns, admin.Connection{ID: "c-evil", ClientID: `<script>window.__xss=4</script>`, User: evil, Remote: "127.0.0.1:1"})
	e.f.mu.Unlock()

	tb := newTab(t)
	noMarkup := func() {
		t.Helper()
		require.Equal(t, "undefined", eval[string](tb, "typeof window.__xss"), "a script of the data ran on %s", tb.Location())
		require.Equal(t, 1, eval[int](tb, "document.scripts.length"), "only console.js on %s", tb.Location())
		require.Equal(t, 1, eval[int](tb, "document.images.length"), "only the logo on %s", tb.Location())
	}
	for _, path := range []string{"/", "/queues", "/queues/orders", "/connections"} {
		tb.Open(e.url(path))
		noMarkup()
	}
	tb.Open(e.url("/queues"))
	require.Contains(t, eval[string](tb, `[...document.querySelectorAll("tr[data-queue]")].map(r => r.dataset.queue).join("\n")`), queue)
	tb.Submit(`tr[data-queue='` + strings.ReplaceAll(queue, `"`, `\"`) + `'] td.name a`)
	noMarkup()
	require.Equal(t, queue, tb.Text("#queue-name"))
	require.Contains(t, tb.Text("table.messages"), evil)
	tb.Submit("table.messages tr[data-id] a")
	noMarkup()
	require.Equal(t, m.ID, tb.Text("#message-id"))
	require.Equal(t, evil+" and more", eval[string](tb, `document.querySelector("#body").textContent`))
	require.Contains(t, tb.Text("table.headers"), evil)

	// The flash of an action that names the message is text too.
	tb.Submit("#delete-message button")
	require.Equal(t, "Deleted message "+m.ID+".", tb.Text("#flash"))
	noMarkup()
}

// TestBrowserConnectionsAndOthers: the connections page closes a connection with the
// reason typed; the topics, durable and stream pages show their figures.
func TestBrowserConnectionsAndOthers(t *testing.T) {
	e := newEnv(t)
	tb := newTab(t)
	tb.Open(e.url("/connections"))
	id := "ID:broker-eu-1-1714561200000-c63"
	require.Contains(t, tb.Text(`tr[data-conn="`+id+`"]`), "192.0.2.44:61002")
	tb.SetValue(`tr[data-conn="`+id+`"] input[name=reason]`, "dashboard misbehaving")
	tb.Submit(`tr[data-conn="` + id + `"] button`)
	require.Contains(t, tb.WaitDialog(), "Close connection "+id)
	require.Equal(t, []closeCall{{id, "dashboard misbehaving"}}, e.f.Closed())
	require.Contains(t, tb.Text("#flash"), "Closed connection "+id)
	require.False(t, eval[bool](tb, `!!document.querySelector('tr[data-conn="`+id+`"]')`))

	tb.Open(e.url("/topics"))
	require.Contains(t, tb.Text(`tr[data-topic="prices.eur"]`), "9,823,114")

	tb.Open(e.url("/durable"))
	body := tb.Text("table.durable")
	require.Contains(t, body, "audit-service")
	require.Contains(t, body, "1,520")
	require.Contains(t, body, "5h 17m")
	tb.Submit(`form[action="/durable/audit-service/prices/delete"] button`)
	require.Contains(t, tb.WaitDialog(), "backlog of 1,520 messages")
	require.Contains(t, tb.Text("#flash"), "Removed durable subscription prices of audit-service")
	require.Equal(t, []string{"durable:audit-service/prices"}, e.f.Removed())

	tb.Open(e.url("/streams"))
	tb.Submit(`table.streams a`)
	require.Equal(t, "4,102", tb.Text(`tr[data-group="analytics"] td.size`))
	require.Contains(t, tb.Text("table.partitions"), "611,204")
}
