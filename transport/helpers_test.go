package transport

import "github.com/go-stomp/stomp/v3/frame"

func frameConnect() *frame.Frame {
	return frame.New("CONNECT", "accept-version", "1.2", "host", "localhost")
}
