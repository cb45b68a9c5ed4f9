package tests

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/browsertest"
)

var adminRE = regexp.MustCompile(`msg="admin listening" addr=(\S+)`)

// adminAddr waits for the broker's admin listener (broker.adminAddress, e.g. from
// BROKER_BROKER_ADMINADDRESS=127.0.0.1:0) and returns its address.
func adminAddr(t testing.TB, b *brokerProc) string {
	t.Helper()
	var addr string
	eventually(t, 10*time.Second, "the admin listener", func() bool {
		m := adminRE.FindStringSubmatch(b.Log())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return addr
}

var browserExitHook sync.Once

// consoleTab opens a tab of the test binary's headless Chromium (started on first
// use, ended when the tests end).
func consoleTab(t testing.TB) *browsertest.Tab {
	t.Helper()
	browserExitHook.Do(func() { onExit(browsertest.CloseShared) })
	return browsertest.Shared(t).NewTab(t)
}

// consoleLogin opens a console tab at base, logs in as user through the login form,
// and returns the tab showing the overview.
func consoleLogin(t testing.TB, base, user, pass string) *browsertest.Tab {
	t.Helper()
	tb := consoleTab(t)
	ctx := tb.Context()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/")))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`input[name=username]`))))
	tb.SetValue(`input[name=username]`, user)
	tb.SetValue(`input[name=password]`, pass)
	resp, err := chromedp.RunResponse(ctx, chromedp.Submit(chromedp.CSS(`input[name=password]`)))
	require.NoError(t, err)
	if resp.Status != 200 {
		page, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("logging in: %s answered %d: %s", resp.URL, resp.Status, page)
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`table.queues`))), "the overview after logging in, at %s", tb.Location())
	tb.CheckPage()
	return tb
}

// TestConsoleEndToEnd drives the web console of the real broker in Chromium: log in
// through the login form, see a queue a STOMP producer filled, browse a message, send
// one from the form (a STOMP consumer receives it), retry a dead letter back to its
// queue, purge a queue after the confirmation, and sign out.
func TestConsoleEndToEnd(t *testing.T) {
	pw := secPasswords()
	b := startSecBroker(t, secBroker{Env: []string{"BROKER_BROKER_ADMINADDRESS=127.0.0.1:0"}})
	base := "http://" + adminAddr(t, b)
	login := stomp.ConnOpt.Login("system", pw["system"])

	// A producer fills orders; a poison message is NACKed into ActiveMQ.DLQ; a
	// consumer waits on console.out, which it creates by subscribing.
	prod := dial(t, b.Addr, login)
	for i := range 5 {
		require.NoError(t, prod.Send("/queue/orders", "application/json", []byte(`{"order":`+strconv.Itoa(i+1)+`}`),
			stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Header("tenant", "eu")))
	}
	require.NoError(t, prod.Send("/queue/poison", "text/plain", []byte("bad input"), stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true")))
	nacker := dial(t, b.Addr, login)
	sub, err := nacker.Subscribe("/queue/poison", stomp.AckClientIndividual)
	require.NoError(t, err)
	require.NoError(t, nacker.Nack(recv(t, sub)))
	unsubscribe(t, sub)
	cons := dial(t, b.Addr, login)
	out, err := cons.Subscribe("/queue/console.out", stomp.AckAuto)
	require.NoError(t, err)
	syncSubscriptions(t, cons)

	// Not logged in: the console is the login form.
	tb := consoleLogin(t, base, "system", pw["system"])
	ctx := tb.Context()

	// The overview shows the queue and the dead letter.
	require.Equal(t, "5", tb.Text(`tr[data-queue="orders"] td.size`))
	require.Contains(t, tb.Text("#dlq-alert"), "ActiveMQ.DLQ")

	// Browse orders and open a message.
	tb.Submit(`tr[data-queue="orders"] td.name a`)
	rows := browsertest.Eval[[]string](tb, `[...document.querySelectorAll("table.messages tr[data-id]")].map(r => r.dataset.id)`)
	require.Len(t, rows, 5)
	tb.Submit(`table.messages tr[data-id] a`)
	require.Equal(t, rows[0], tb.Text("#message-id"))
	require.Equal(t, `{"order":1}`, browsertest.Eval[string](tb, `document.querySelector("#body").textContent`))
	require.Contains(t, tb.Text("table.headers"), "tenant")

	// Send from the form of console.out: the STOMP consumer gets it.
	tb.Open(base + "/queues/console.out")
	tb.SetValue("#send-body", "hello from the console")
	tb.SetValue("#send-headers", "app: console-test")
	tb.Submit("#send-button")
	require.Contains(t, tb.Text("#flash"), "Sent message")
	m := recv(t, out)
	require.Equal(t, "hello from the console", string(m.Body))
	require.Equal(t, "console-test", m.Header.Get("app"))

	// Retry the dead letter: it is back on poison.
	tb.Open(base + "/queues/ActiveMQ.DLQ")
	require.Contains(t, tb.Text("table.messages"), "/queue/poison")
	tb.Submit("table.messages form.retry button")
	require.Contains(t, tb.Text("#flash"), "to its original destination")
	require.Equal(t, "0", tb.Text("#queue-size"))
	retried, err := cons.Subscribe("/queue/poison", stomp.AckAuto)
	require.NoError(t, err)
	require.Equal(t, "bad input", string(recv(t, retried).Body))

	// Purge orders, confirming.
	tb.Open(base + "/queues/orders")
	tb.Submit("#purge button")
	require.Contains(t, tb.WaitDialog(), "Purge all 5 waiting messages of queue orders")
	require.Equal(t, "Purged 5 messages from orders.", tb.Text("#flash"))
	require.Equal(t, "0", tb.Text("#queue-size"))
	require.True(t, strings.Contains(b.Log(), "purged a queue"), "the purge is logged")

	// Sign out: back to the login form, and the console is closed again.
	tb.Submit("header.top .user button")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`input[name=username]`))))
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/queues")))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`input[name=username]`))), "after signing out, %s", tb.Location())
}
