package broker

import (
	"context"
	"sync"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// faultStore is a memory store whose commits and scans can be made to fail, and whose
// asynchronous commits can be held back, for tests of what the broker does then.
type faultStore struct {
	*memstore.Store
	mu         sync.Mutex
	commitErr  func(b *faultBatch) error // non-nil error: the commit fails
	scanErr    func(dest string) error   // also for ScanSub, with the sub's String
	hold       chan struct{}             // non-nil: async commits wait until it is closed
	heldCommit sync.WaitGroup
}

func newFaultStore() *faultStore { return &faultStore{Store: memstore.New()} }

func (s *faultStore) set(fn func(s *faultStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

func (s *faultStore) Begin() persistence.Batch { return &faultBatch{Batch: s.Store.Begin(), s: s} }

func (s *faultStore) Scan(ctx context.Context, dest string, after uint64, max int, fn func(*persistence.Message) error) error {
	s.mu.Lock()
	f := s.scanErr
	s.mu.Unlock()
	if f != nil {
		if err := f(dest); err != nil {
			return err
		}
	}
	return s.Store.Scan(ctx, dest, after, max, fn)
}

func (s *faultStore) ScanSub(ctx context.Context, sub persistence.SubKey, after uint64, max int, fn func(*persistence.Message) error) error {
	s.mu.Lock()
	f := s.scanErr
	s.mu.Unlock()
	if f != nil {
		if err := f(sub.String()); err != nil {
			return err
		}
	}
	return s.Store.ScanSub(ctx, sub, after, max, fn)
}

type faultBatch struct {
	persistence.Batch
	s    *faultStore
	acks int      // Ack and AckSub operations
	adds []string // the Dest of each Add
}

func (b *faultBatch) Add(m *persistence.Message) {
	b.adds = append(b.adds, m.Dest)
	b.Batch.Add(m)
}

func (b *faultBatch) Ack(dest string, seq uint64) {
	b.acks++
	b.Batch.Ack(dest, seq)
}

func (b *faultBatch) AckSub(sub persistence.SubKey, seq uint64) {
	b.acks++
	b.Batch.AckSub(sub, seq)
}

func (b *faultBatch) Commit(ctx context.Context, d persistence.Durability) error {
	b.s.mu.Lock()
	f := b.s.commitErr
	b.s.mu.Unlock()
	if f != nil {
		if err := f(b); err != nil {
			b.Batch.Rollback()
			return err
		}
	}
	return b.Batch.Commit(ctx, d)
}

func (b *faultBatch) CommitAsync(d persistence.Durability, done func(error)) {
	b.s.mu.Lock()
	hold := b.s.hold
	b.s.mu.Unlock()
	if hold == nil {
		done(b.Commit(context.Background(), d))
		return
	}
	b.s.heldCommit.Add(1)
	go func() {
		defer b.s.heldCommit.Done()
		<-hold
		done(b.Commit(context.Background(), d))
	}()
}
