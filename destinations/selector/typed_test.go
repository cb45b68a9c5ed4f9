package selector

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

// typedSample is a message as a JMS client sends it: typed properties beside string
// headers.
func typedSample() *persistence.Message {
	return &persistence.Message{
		Dest: "queue://ORDERS", ID: "ID:2", Priority: 4, Kind: persistence.BodyMap,
		Headers: persistence.Headers{"type", "order", "amount", "150", "region", "EU"},
		Props: persistence.Props{
			persistence.IntProp("qty", persistence.PropInt, 250),
			persistence.IntProp("orderId", persistence.PropLong, 1234567890123),
			persistence.IntProp("tiny", persistence.PropByte, -128),
			persistence.IntProp("small", persistence.PropShort, 300),
			persistence.DoubleProp("price", 101.25),
			persistence.FloatProp("fprice", 1.1),
			persistence.FloatProp("half", 0.5),
			persistence.BoolProp("urgent", true),
			persistence.BoolProp("off", false),
			persistence.BytesProp("raw", []byte("x")),
		},
	}
}

// typedTests: a typed property compares as its JMS type; string headers keep their
// numeric comparison (the expression table in selector_test.go holds that).
var typedTests = []struct {
	sel  string
	want bool
}{
	// Integers are exact numbers, against exact and approximate literals.
	{"qty = 250", true},
	{"qty = 250.0", true},
	{"qty > 249.5", true},
	{"qty < 250", false},
	{"qty <> 251", true},
	{"orderId = 1234567890123", true},
	{"orderId > 1234567890122 AND orderId < 1234567890124", true},
	{"tiny = -128", true},
	{"small >= 300 AND small <= 300", true},
	{"qty * 2 = 500", true},
	{"qty + small = 550", true},
	{"-tiny = 128", true},
	{"qty / 3 = 83", true}, // exact division of exact numbers
	// float and double are approximate numbers; a float is widened, as Java does.
	{"price = 101.25", true},
	{"price > 101", true},
	{"price * 2 = 202.5", true},
	{"half = 0.5", true},
	{"fprice = 1.1", false}, // (double) 1.1f is 1.100000023841858
	{"fprice > 1.09 AND fprice < 1.11", true},
	{"price > qty", false},
	{"qty > price", true},
	// Typed numbers against string headers that hold numbers: both are numbers.
	{"qty > amount", true},
	{"amount + qty = 400", true},
	// Booleans are booleans: conditions, equal to TRUE/FALSE, never ordered or numbers.
	{"urgent", true},
	{"NOT off", true},
	{"urgent = TRUE", true},
	{"off = FALSE", true},
	{"urgent <> off", true},
	{"urgent AND qty > 0", true},
	{"urgent = 1", false},
	{"urgent > off", false},
	// BETWEEN.
	{"qty BETWEEN 200 AND 300", true},
	{"qty BETWEEN 250.5 AND 300", false},
	{"qty NOT BETWEEN 1 AND 10", true},
	{"price BETWEEN 101 AND 102", true},
	{"tiny BETWEEN -200 AND 0", true},
	{"urgent BETWEEN 0 AND 1", false},
	// IN takes strings only: a typed number is not in a list of strings.
	{"qty IN ('250')", false},
	{"qty NOT IN ('250')", true},
	{"region IN ('EU', 'US') AND qty = 250", true},
	// A byte array is not comparable: NULL.
	{"raw IS NULL", true},
	{"raw IS NOT NULL", false},
	{"raw = 'x'", false},
	{"NOT (raw = 'x')", false},
	{"raw IN ('x')", false},
	{"raw NOT IN ('x')", false},
	{"raw LIKE 'x%'", false},
	// Typed properties that are set are not NULL; unknown names are.
	{"qty IS NOT NULL AND urgent IS NOT NULL AND price IS NOT NULL", true},
	{"nothing IS NULL", true},
}

func TestTypedProperties(t *testing.T) {
	m := typedSample()
	adapter := &Message{M: m, DeliveryCount: 1}
	for _, tt := range typedTests {
		t.Run(tt.sel, func(t *testing.T) {
			sel, err := Parse(tt.sel)
			require.NoError(t, err)
			assert.Equal(t, tt.want, sel.MatchesMessage(m, 1), "MatchesMessage")
			assert.Equal(t, tt.want, sel.Matches(adapter), "Matches(*Message)")
			assert.Equal(t, tt.want, sel.Matches(typedOnly{adapter}), "Matches(TypedProperties)")
		})
	}
	// The Properties view formats them.
	for name, want := range map[string]string{"qty": "250", "price": "101.25", "urgent": "true", "tiny": "-128"} {
		v, ok := adapter.Get(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, v, name)
	}
	_, ok := adapter.Get("raw")
	assert.False(t, ok, "a byte array is NULL to a selector")
	assert.Equal(t, Float, adapter.Value("price").Kind())
	assert.Equal(t, Int, adapter.Value("qty").Kind())
	assert.Equal(t, Bool, adapter.Value("urgent").Kind())
	assert.Equal(t, Null, adapter.Value("raw").Kind())
}

// Typed properties are read without allocating, like headers.
func TestTypedMatchDoesNotAllocate(t *testing.T) {
	m := typedSample()
	adapter := &Message{M: m, DeliveryCount: 1}
	sel, err := Parse("qty BETWEEN 200 AND 300 AND price > 100.5 AND urgent AND raw IS NULL AND type = 'order'")
	require.NoError(t, err)
	require.True(t, sel.MatchesMessage(m, 1))
	assert.Zero(t, testing.AllocsPerRun(100, func() { sel.MatchesMessage(m, 1) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { sel.Matches(adapter) }))
}

// BenchmarkMatchTyped evaluates a selector over typed properties (exact, approximate,
// boolean) and a string header.
func BenchmarkMatchTyped(b *testing.B) {
	m := typedSample()
	sel, err := Parse("qty BETWEEN 200 AND 300 AND price > 100.5 AND urgent AND type = 'order'")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !sel.MatchesMessage(m, 1) {
			b.Fatal("no match")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
