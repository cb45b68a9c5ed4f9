package pgstore

import (
	"github.com/activemq-go/broker/persistence"
)

// destState is what the store keeps in memory about one destination.
//
// LastSeq survives a restart as max(DESTS.LAST_SEQ, the highest stored ID). So the
// DESTS row is written only when that maximum could fall behind LastSeq: in the
// transaction that deletes messages of the destination (ack, purge, release by the
// last subscription) or adds one that is not stored (a topic message owed to nobody),
// and only if the row is behind. A transaction of new messages writes no DESTS row.
type destState struct {
	lastSeq   uint64 // highest seq ever added
	persisted uint64 // DESTS.LAST_SEQ as committed
	inDests   bool   // the DESTS row exists
	msgs      int64
	bytes     int64 // sum of len(Body)
	added     bool  // an Add was committed (a DESTS row or a message exists): Recover lists it
}

// subRec is one durable subscription and its SUB_ID.
type subRec struct {
	id   int64
	info persistence.SubInfo
}

// state mirrors the committed tables: it is loaded at open (and again after a
// commit whose outcome is unknown, and when Lock is acquired) and changed only by the
// writer, after COMMIT, under Store.mu. Stats and Recover read it; so nothing of a
// batch is visible before all of it is.
type state struct {
	dests     map[string]*destState
	subs      map[persistence.SubKey]*subRec
	nextSubID int64
}

func newState() *state {
	return &state{dests: map[string]*destState{}, subs: map[persistence.SubKey]*subRec{}, nextSubID: 1}
}

// recovered is what Recover reports, with pending, the rows of SUB_PENDING by SUB_ID
// (countPending), as the subscriptions' backlogs.
func (st *state) recovered(pending map[int64]int64) *persistence.Recovered {
	r := &persistence.Recovered{
		Destinations: make([]persistence.DestState, 0, len(st.dests)),
		Subs:         make([]persistence.SubInfo, 0, len(st.subs)),
		Pending:      make(map[persistence.SubKey]int64, len(st.subs)),
	}
	for name, d := range st.dests {
		if d.added {
			r.Destinations = append(r.Destinations, persistence.DestState{
				Name: name, LastSeq: d.lastSeq, Msgs: d.msgs, Bytes: d.bytes,
			})
		}
	}
	for k, s := range st.subs {
		r.Subs = append(r.Subs, s.info)
		if n := pending[s.id]; n > 0 {
			r.Pending[k] = n
		}
	}
	r.Sort()
	return r
}

// overlay is the state as one transaction changes it: copies of what it touched over
// the committed state, which it never modifies. It is merged after COMMIT and
// dropped on failure.
type overlay struct {
	base      *state
	dests     map[string]*destState
	subs      map[persistence.SubKey]*subRec // nil value: removed
	nextSubID int64
}

func newOverlay(base *state) *overlay {
	return &overlay{base: base, dests: map[string]*destState{}, subs: map[persistence.SubKey]*subRec{}, nextSubID: base.nextSubID}
}

// dest returns the transaction's copy of dest's state; nil if the destination is
// unknown and create is false.
func (ov *overlay) dest(name string, create bool) *destState {
	if d, ok := ov.dests[name]; ok {
		return d
	}
	var d *destState
	if b := ov.base.dests[name]; b != nil {
		c := *b
		d = &c
	} else if create {
		d = &destState{}
	} else {
		return nil
	}
	ov.dests[name] = d
	return d
}

// sub returns the subscription as the transaction sees it, nil if there is none.
func (ov *overlay) sub(key persistence.SubKey) *subRec {
	if s, ok := ov.subs[key]; ok {
		return s
	}
	return ov.base.subs[key]
}

func (ov *overlay) setSub(key persistence.SubKey, s *subRec) { ov.subs[key] = s }

// merge applies the overlay to base. The caller holds Store.mu for writing.
func (ov *overlay) merge() {
	for name, d := range ov.dests {
		ov.base.dests[name] = d
	}
	for key, s := range ov.subs {
		if s == nil {
			delete(ov.base.subs, key)
		} else {
			ov.base.subs[key] = s
		}
	}
	ov.base.nextSubID = ov.nextSubID
}
