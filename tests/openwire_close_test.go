package tests

import "testing"

// TestOpenWireClosePrefetched: a consumer that closes, or whose session closes, gives
// back the messages its client only prefetched as never delivered (ActiveMQ reads the
// RemoveInfo's lastDeliveredSequenceId): the next consumer gets them unflagged, with
// JMSXDeliveryCount 1; the one the closed consumer's application got comes again
// redelivered where it was not acknowledged.
func TestOpenWireClosePrefetched(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		for _, ack := range []string{"auto", "client", "transacted"} {
			for _, closing := range []string{"consumer", "session"} {
				t.Run(ack+"/"+closing, func(t *testing.T) {
					r := runJavaOW(t, owClasspath(t), "OwClose", b.URL, "close-prefetched", "dest="+owName(t, "q"), "ack="+ack, "close="+closing)
					want := "m1/true/2,m2/false/1,m3/false/1,m4/false/1"
					if ack == "auto" {
						want = "m2/false/1,m3/false/1,m4/false/1" // m1 was acknowledged
					}
					assertOW(t, r, map[string]string{"first": "m1", "next": want})
				})
			}
		}
	})
}
