package pgstore

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/oprec"
)

// runKind is the kind of operations a planner is collecting into one statement.
type runKind uint8

const (
	runNone runKind = iota
	runInsert
	runAck
	runAckSub
)

// planner turns the operations of a group, in order, into the statements of one
// pgx.Batch. Consecutive operations of one kind (new messages, acks, subscription
// acks) become one set-based statement over unnest() arrays, so a group costs a few
// statements whatever its size, all sent in one round trip. Whatever depends on the
// state (is this seq new? which subscriptions does a topic message name? what does
// this subscription hold?) is decided here against the overlay; the counters are
// updated by result callbacks, which pgx runs in statement order.
type planner struct {
	t   *tables
	b   *pgx.Batch
	ov  *overlay
	run runKind

	ins   insertRun
	acks  keyRun
	asubs ackSubRun
	// keep names the destinations whose DESTS row must hold their LastSeq when the
	// transaction commits (see destState.persisted).
	keep map[string]bool
}

type insertRun struct {
	dest    []string
	id      []int64
	prod    []pgtype.Text
	prodSeq []pgtype.Int8
	expires []int64
	msg     [][]byte
	prio    []int64
	size    []int64
	// SUB_PENDING rows of the topic messages among them
	pSub  []int64
	pID   []int64
	pDest []string
}

// destSeq is one message key.
type destSeq struct {
	dest string
	seq  int64
}

type keyRun struct {
	dest  []string
	id    []int64
	seen  map[destSeq]bool
	topic bool // a topic message is among them: its pending rows go too
}

type ackSubRun struct {
	sub  []int64
	id   []int64
	seen map[[2]int64]bool
	cand keyRun // messages that may now be owed to nobody
}

func newPlanner(t *tables, b *pgx.Batch, ov *overlay) *planner {
	return &planner{t: t, b: b, ov: ov, keep: map[string]bool{}}
}

// apply plans one operation.
func (p *planner) apply(o *op) {
	switch o.Kind {
	case oprec.Add:
		p.add(o)
	case oprec.Ack:
		p.ack(o.Dest, int64(o.Seq))
	case oprec.AckSub:
		p.ackSub(o.Sub, int64(o.Seq))
	case oprec.AddSub:
		p.addSub(*o.Info)
	case oprec.RemoveSub:
		p.flush()
		if s := p.ov.sub(o.Sub); s != nil {
			p.removeSub(s)
		}
	case oprec.Purge:
		p.purge(o.Dest)
	}
}

// begin makes the current run one of kind, flushing another kind first.
func (p *planner) begin(kind runKind) {
	if p.run != kind {
		p.flush()
		p.run = kind
	}
}

// finish flushes the last run and queues the DESTS writes: an UPDATE of the rows
// that exist, an upsert of the others (once in a destination's life).
func (p *planner) finish() {
	p.flush()
	var upd, ins destSeqs
	for name := range p.keep {
		d := p.ov.dest(name, false)
		if d == nil || d.lastSeq <= d.persisted && d.inDests {
			continue
		}
		if d.inDests {
			upd.add(name, d.lastSeq)
		} else {
			ins.add(name, d.lastSeq)
		}
		d.persisted, d.inDests = d.lastSeq, true
	}
	if len(upd.dest) > 0 {
		p.b.Queue(p.t.updateDests, upd.dest, upd.seq)
	}
	if len(ins.dest) > 0 {
		p.b.Queue(p.t.upsertDests, ins.dest, ins.seq)
	}
}

type destSeqs struct {
	dest []string
	seq  []int64
}

func (x *destSeqs) add(dest string, seq uint64) {
	x.dest = append(x.dest, dest)
	x.seq = append(x.seq, int64(seq))
}

func (p *planner) add(o *op) {
	d := p.ov.dest(o.Dest, true)
	// dbSeq is seq as the BIGINT columns hold it (Add checked that it fits).
	seq, dbSeq := o.Seq, int64(o.Seq)
	isNew := seq > d.lastSeq // no stored row can have a seq above LastSeq
	d.added = true
	d.lastSeq = max(d.lastSeq, seq)
	topic := persistence.KindOf(o.Dest) == persistence.KindTopic

	var subIDs []int64
	if topic {
		for _, k := range o.Msg.subs {
			s := p.ov.sub(k)
			if s != nil && s.info.Dest == o.Dest && !containsID(subIDs, s.id) {
				subIDs = append(subIDs, s.id)
			}
		}
	}
	if !isNew { // may replace a stored message: delete it (and what it was owed) first
		p.flush()
		p.keep[o.Dest] = true
		p.b.Queue(p.t.deleteMsg, o.Dest, dbSeq).Query(p.dropped)
		if topic {
			p.b.Queue(p.t.deletePendingOfMsg, o.Dest, dbSeq)
		}
	}
	if topic && len(subIDs) == 0 {
		p.keep[o.Dest] = true // owed to nobody: not stored, but it counts for LastSeq
		return
	}
	p.begin(runInsert)
	r := &p.ins
	prod, prodSeq := splitMessageID(o.Msg.msgID)
	r.dest = append(r.dest, o.Dest)
	r.id = append(r.id, dbSeq)
	r.prod = append(r.prod, prod)
	r.prodSeq = append(r.prodSeq, prodSeq)
	r.expires = append(r.expires, o.Msg.expires)
	r.msg = append(r.msg, o.Msg.msg)
	r.prio = append(r.prio, o.Msg.prio)
	r.size = append(r.size, o.Msg.size)
	for _, id := range subIDs {
		r.pSub = append(r.pSub, id)
		r.pID = append(r.pID, dbSeq)
		r.pDest = append(r.pDest, o.Dest)
	}
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// splitMessageID fills ActiveMQ's MSGID_PROD and MSGID_SEQ: "ID:host-1-2:3:4:5:6"
// is producer "ID:host-1-2:3:4:5" and sequence 6. An ID without a numeric last part
// is all producer; one that cannot be text is NULL. Informational only: the message
// itself, ID included, is in MSG.
func splitMessageID(id string) (pgtype.Text, pgtype.Int8) {
	if id == "" || !validText(id) {
		return pgtype.Text{}, pgtype.Int8{}
	}
	if i := strings.LastIndexByte(id, ':'); i > 0 {
		if n, err := strconv.ParseInt(id[i+1:], 10, 64); err == nil && n >= 0 {
			return pgtype.Text{String: id[:i], Valid: true}, pgtype.Int8{Int64: n, Valid: true}
		}
	}
	return pgtype.Text{String: id, Valid: true}, pgtype.Int8{}
}

func (p *planner) ack(dest string, seq int64) {
	if p.ov.dest(dest, false) == nil {
		return // nothing was ever stored there
	}
	p.begin(runAck)
	r := &p.acks
	k := destSeq{dest, seq}
	if r.seen == nil {
		r.seen = map[destSeq]bool{}
	}
	if r.seen[k] {
		return
	}
	r.seen[k] = true
	p.keep[dest] = true
	r.dest = append(r.dest, dest)
	r.id = append(r.id, seq)
	r.topic = r.topic || persistence.KindOf(dest) == persistence.KindTopic
}

func (p *planner) ackSub(key persistence.SubKey, seq int64) {
	s := p.ov.sub(key)
	if s == nil {
		return
	}
	p.begin(runAckSub)
	r := &p.asubs
	if r.seen == nil {
		r.seen = map[[2]int64]bool{}
		r.cand.seen = map[destSeq]bool{}
	}
	if r.seen[[2]int64{s.id, seq}] {
		return
	}
	r.seen[[2]int64{s.id, seq}] = true
	r.sub = append(r.sub, s.id)
	r.id = append(r.id, seq)
	p.keep[s.info.Dest] = true
	if k := (destSeq{s.info.Dest, seq}); !r.cand.seen[k] {
		r.cand.seen[k] = true
		r.cand.dest = append(r.cand.dest, k.dest)
		r.cand.id = append(r.cand.id, seq)
	}
}

func (p *planner) addSub(info persistence.SubInfo) {
	p.flush()
	old := p.ov.sub(info.Key)
	if old != nil && old.info.Dest == info.Dest { // same topic: keep what it holds
		p.b.Queue(p.t.updateSub, old.id, info.Selector, info.Created)
		p.ov.setSub(info.Key, &subRec{id: old.id, info: info})
		return
	}
	if old != nil { // another topic: release everything first, as RemoveSub
		p.removeSub(old)
	}
	id := p.ov.nextSubID
	p.ov.nextSubID++
	p.b.Queue(p.t.insertSub, id, info.Dest, info.Key.ClientID, info.Key.Name, info.Selector, info.Created)
	p.ov.setSub(info.Key, &subRec{id: id, info: info})
}

// removeSub plans the removal of s. The caller has flushed.
func (p *planner) removeSub(s *subRec) {
	if p.ov.dest(s.info.Dest, false) != nil {
		p.keep[s.info.Dest] = true
	}
	p.b.Queue(p.t.removeSubMsgs, s.id, s.info.Dest).Query(p.dropped)
	p.b.Queue(p.t.dropSub, s.id)
	p.ov.setSub(s.info.Key, nil)
}

func (p *planner) purge(dest string) {
	d := p.ov.dest(dest, false)
	if d == nil {
		return
	}
	p.flush()
	p.keep[dest] = true
	if persistence.KindOf(dest) == persistence.KindTopic {
		p.b.Queue(p.t.purgePending, dest)
	}
	p.b.Queue(p.t.purgeMsgs, dest).Exec(func(pgconn.CommandTag) error {
		d.msgs, d.bytes = 0, 0
		return nil
	})
}

// dropped is the result callback of a statement returning (CONTAINER, SIZE) of the
// messages it deleted.
func (p *planner) dropped(rows pgx.Rows) error {
	var (
		dest string
		size int64
	)
	_, err := pgx.ForEachRow(rows, []any{&dest, &size}, func() error {
		d := p.ov.dest(dest, true)
		d.msgs--
		d.bytes -= size
		return nil
	})
	return err
}

// flush queues the statements of the current run.
func (p *planner) flush() {
	switch p.run {
	case runInsert:
		r := p.ins
		p.ins = insertRun{}
		p.b.Queue(p.t.insertMsgs, r.dest, r.id, r.prod, r.prodSeq, r.expires, r.msg, r.prio, r.size).
			Exec(func(pgconn.CommandTag) error {
				for i, name := range r.dest {
					d := p.ov.dest(name, true)
					d.msgs++
					d.bytes += r.size[i]
				}
				return nil
			})
		if len(r.pSub) > 0 {
			p.b.Queue(p.t.insertPending, r.pSub, r.pID, r.pDest)
		}
	case runAck:
		r := p.acks
		p.acks = keyRun{}
		if len(r.dest) == 0 {
			break
		}
		p.b.Queue(p.t.ackMsgs, r.dest, r.id).Query(p.dropped)
		if r.topic {
			p.b.Queue(p.t.ackPending, r.dest, r.id)
		}
	case runAckSub:
		r := p.asubs
		p.asubs = ackSubRun{}
		p.b.Queue(p.t.ackSubPending, r.sub, r.id)
		p.b.Queue(p.t.ackSubOrphans, r.cand.dest, r.cand.id).Query(p.dropped)
		p.b.Queue(p.t.ackSubLast, r.sub, r.id)
	}
	p.run = runNone
}
