package setting

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSuggest(t *testing.T) {
	opts := []string{"maxFrameSize", "maxConnections", "wireFormat.maxFrameSize", "brokerName"}
	assert.Equal(t, "maxFrameSize", Suggest("maxFrameSise", opts))
	assert.Equal(t, "maxFrameSize", Suggest("MAXFRAMESIZE", opts))
	assert.Equal(t, "brokerName", Suggest("brokerNme", opts))
	assert.Equal(t, "maxConnections", Suggest("maxConnection", opts))
	assert.Empty(t, Suggest("trace", opts), "nothing close")
	assert.Empty(t, Suggest("x", opts))
	assert.Empty(t, Suggest("maxFrameSize", nil))
}
