package loadtest

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
)

// Header names of the bench protocol; see the package comment.
const (
	hdrRun = "bench-run"
	hdrP   = "bench-p"
	hdrSeq = "bench-seq"
	hdrTS  = "bench-ts"

	// hdrDedupID is the duplicate-detection id header (Options.DedupIDs).
	hdrDedupID = "_AMQ_DUPL_ID"
)

// producer sends its share of the messages over one connection.
type producer struct {
	r     *run
	id    int
	idStr string
	count int
	c     *client

	// seq is the sequence number of the SEND being built; read by headers.
	seq int
	// plain and receipted are the SEND options, built once so that a send
	// allocates nothing of ours beyond two header values.
	plain, receipted []func(*frame.Frame) error

	// The raw client: prefix is a SEND frame up to the value of bench-seq
	// (everything that does not change), appendSend encodes the SEND of seq
	// with receipt when not empty.
	prefix     []byte
	receipt    string
	appendSend func([]byte) []byte

	sent     atomic.Int64
	lastSend atomic.Int64 // unix nanos when a send last returned
	finished atomic.Int64 // unix nanos when the last send returned
}

func newProducer(r *run, id, count int, c *client) *producer {
	p := &producer{r: r, id: id, idStr: strconv.Itoa(id), count: count, c: c}
	p.plain = []func(*frame.Frame) error{p.headers}
	p.receipted = []func(*frame.Frame) error{p.headers, stomp.SendOpt.Receipt}
	if c.w != nil {
		b := append([]byte(nil), frame.SEND...)
		b = c.w.appendHeader(b, frame.Destination, r.o.Destination)
		b = c.w.appendHeader(b, frame.ContentLength, strconv.Itoa(len(r.body)))
		if r.o.Persistent {
			b = append(b, "\npersistent:true"...)
		}
		b = appendRawHeader(b, hdrRun, r.id)
		b = appendRawHeader(b, hdrP, p.idStr)
		p.prefix = append(b, "\n"+hdrSeq+":"...)
		p.appendSend = p.encodeSend
		go c.w.pump()
	}
	return p
}

// encodeSend appends the SEND frame of p.seq, with bench-ts taken now.
func (p *producer) encodeSend(b []byte) []byte {
	b = append(b, p.prefix...)
	b = strconv.AppendInt(b, int64(p.seq), 10)
	if p.r.o.DedupIDs {
		b = append(b, "\n"+hdrDedupID+":"...)
		b = append(b, p.r.id...)
		b = append(b, '-')
		b = append(b, p.idStr...)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(p.seq), 10)
	}
	b = append(b, "\n"+hdrTS+":"...)
	b = strconv.AppendInt(b, time.Now().UnixNano(), 10)
	if p.receipt != "" {
		b = appendRawHeader(b, frame.Receipt, p.receipt)
	}
	b = append(b, "\n\n"...)
	b = append(b, p.r.body...)
	return append(b, 0)
}

// sendRaw sends one message with the raw client, waiting for its receipt
// when asked to.
func (p *producer) sendRaw(receipt bool) error {
	w := p.c.w
	p.receipt = ""
	if receipt {
		p.receipt = w.newReceipt()
	}
	if err := w.put(p.appendSend); err != nil {
		return p.writeErr(err)
	}
	if receipt {
		return w.await(p.receipt)
	}
	return nil
}

// writeErr is the error of a put that failed: the broker's ERROR message
// when it sent one before it closed the connection.
func (p *producer) writeErr(err error) error {
	select {
	case <-p.c.w.dead:
		return p.c.w.rerr
	default:
		return err
	}
}

// headers adds the bench headers to a SEND frame; go-stomp calls it while
// building the frame, so bench-ts is taken as late as the client allows.
func (p *producer) headers(f *frame.Frame) error {
	f.Header.Add(hdrRun, p.r.id)
	f.Header.Add(hdrP, p.idStr)
	f.Header.Add(hdrSeq, strconv.Itoa(p.seq))
	if p.r.o.DedupIDs {
		f.Header.Add(hdrDedupID, p.r.id+"-"+p.idStr+"-"+strconv.Itoa(p.seq))
	}
	if p.r.o.Persistent {
		f.Header.Add("persistent", "true")
	}
	f.Header.Add(hdrTS, strconv.FormatInt(time.Now().UnixNano(), 10))
	return nil
}

// errStopped ends a send that was waiting for room when the run stopped.
var errStopped = errors.New("loadtest: stopped")

// send sends one message. go-stomp's Send waits for room on its outgoing
// channel while holding the lock that its connection goroutine needs to shut
// down, so a dead connection would keep it there for the whole send timeout.
// The timeout is therefore short (sendPoll) and a timed-out send, which
// queued nothing, is retried until the run stops or the broker has taken
// nothing for IdleTimeout.
func (p *producer) send(opts []func(*frame.Frame) error) error {
	r := p.r
	var since time.Time
	for {
		err := p.c.stomp.Send(r.o.Destination, "", r.body, opts...)
		if !errors.Is(err, stomp.ErrMsgSendTimeout) {
			return err
		}
		if r.stopping.Load() {
			return errStopped
		}
		if since.IsZero() {
			since = time.Now()
		} else if time.Since(since) >= r.o.IdleTimeout {
			return fmt.Errorf("broker took nothing for %s: %w", r.o.IdleTimeout, err)
		}
	}
}

// run sends until done or the run stops, then disconnects. A receipt on
// every K-th send (K = r.receiptEvery) makes Send wait for it.
//
// The last send always asks for a receipt, whatever Options.Receipts says.
// Once it is back, the broker has taken every message and go-stomp's
// outgoing channel is empty, so the DISCONNECT cannot block (see
// client.disconnect); without it, a producer with a full channel would have
// to close its socket and drop the frames still queued.
func (p *producer) run() {
	r := p.r
	k := r.receiptEvery
	failed := false
	for seq := 0; seq < p.count && !r.stopping.Load(); seq++ {
		p.seq = seq
		receipt := (k > 0 && (seq+1)%k == 0) || seq == p.count-1
		var err error
		switch {
		case p.c.w != nil:
			err = p.sendRaw(receipt)
		case receipt:
			err = p.send(p.receipted)
		default:
			err = p.send(p.plain)
		}
		if err != nil {
			if !errors.Is(err, errStopped) {
				r.fail(fmt.Errorf("%w: producer %d: send %d: %w", ErrConnection, p.id, seq, err))
				failed = true
			}
			break
		}
		p.sent.Add(1)
		p.lastSend.Store(time.Now().UnixNano())
	}
	p.finished.Store(time.Now().UnixNano())
	if failed {
		p.c.close()
		return
	}
	// go-stomp hands an ERROR frame only to pending receipts; one that
	// arrives while none is pending just closes the connection, and the
	// next Send reports "connection already closed" without its message.
	if err := p.c.disconnect(); err != nil {
		r.fail(fmt.Errorf("%w: producer %d: disconnect: %w", ErrConnection, p.id, err))
	}
}
