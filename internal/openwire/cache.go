package openwire

// The marshalling cache (CacheEnabled): ids and destinations that repeat from frame to
// frame are sent once with a slot index, then as the index alone. Each direction has its
// own cache of CacheSize slots. The decoding side is a slice the peer's indexes address
// (decoder.cache); the encoding side below reproduces ActiveMQ's slot allocation: slots are
// taken in turn, and before each frame the oldest entries are evicted until 100 slots are
// free.

const (
	defaultCacheSize = 32767 / 2 // ActiveMQ's MARSHAL_CACHE_SIZE: the size when 0 is negotiated
	cacheFreeSpace   = 100
	noCacheSlot      = -1
)

type marshalCache struct {
	slots []cacheKey // the zero key: a free slot
	index map[cacheKey]int16
	next  int
	evict int
}

func newMarshalCache(size int) *marshalCache {
	return &marshalCache{slots: make([]cacheKey, size), index: make(map[cacheKey]int16)}
}

// sweep frees slots before a frame is encoded.
func (c *marshalCache) sweep() {
	for len(c.index) > len(c.slots)-cacheFreeSpace && len(c.index) > 0 {
		if k := c.slots[c.evict]; k.typ != 0 {
			delete(c.index, k)
		}
		c.slots[c.evict] = cacheKey{}
		c.evict = (c.evict + 1) % len(c.slots)
	}
}

// lookup returns the slot of x and whether the peer already has it; on a miss x takes the
// next slot (or none, -1, when the cache is full or x is not cacheable).
func (c *marshalCache) lookup(x marshaler) (int16, bool) {
	if x == nil {
		return noCacheSlot, false
	}
	k, ok := keyOf(x)
	if !ok {
		return noCacheSlot, false
	}
	if i, ok := c.index[k]; ok {
		return i, true
	}
	i := c.next
	c.next = (c.next + 1) % len(c.slots)
	if len(c.index) >= len(c.slots) {
		return noCacheSlot, false
	}
	if old := c.slots[i]; old.typ != 0 {
		delete(c.index, old)
	}
	c.slots[i] = k
	c.index[k] = int16(i)
	return int16(i), false
}
