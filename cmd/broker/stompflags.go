package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/stompclient"
)

// Defaults of the STOMP client commands.
const (
	defaultStompURL = "stomp://127.0.0.1:61613"
	// envStompURL stands for --url. Not BROKER_URL (its older name, still read): the
	// configuration's variables start with BROKER_, and serve warned of it.
	envStompURL    = "BROKERCTL_URL"
	envStompURLOld = "BROKER_URL"
)

// fromEnv is the value of the first of names that is set and not empty ("" if none).
func fromEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// urlHelp is the part of the STOMP client commands' help that explains --url.
const urlHelp = `
--url is where and as whom to connect (default $` + envStompURL + `, else ` + defaultStompURL + `):
  stomp://user:pass@host:port        STOMP over TCP (port 61613 when left out)
  stomp+ssl://user:pass@host:port    over TLS (61612); --ca-file, --cert-file, --key-file,
                                     --insecure-skip-verify
  ws://user:pass@host:port/path      over WebSocket (61614)
  wss://user:pass@host:port/path     over WebSocket and TLS (61619)
The user and password are CONNECT's login and passcode; percent-encode reserved
characters (p%40ss for p@ss). Arguments are visible to other users of the machine (ps):
set ` + envStompURL + ` instead to keep a password out of them.`

// stompFlags are the connection flags of send, consume and browse.
type stompFlags struct {
	url      string
	tls      tlsFlags
	progress time.Duration
}

func (f *stompFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "broker URL: stomp://user:pass@host:port, stomp+ssl://..., ws://host:port/path, wss://... (default $"+envStompURL+", else "+defaultStompURL+")")
	f.tls.register(fs, "", "the broker")
	fs.DurationVar(&f.progress, "progress", defaultProgress, "interval of the progress lines on stderr when it is not a terminal (0: no progress at all)")
}

// target is the URL and the dial options the flags say; every error is a usage error.
func (f *stompFlags) target(fs *pflag.FlagSet) (*stompclient.URL, stompclient.Options, error) {
	raw := f.url
	if !fs.Changed("url") {
		raw = cmp.Or(fromEnv(envStompURL, envStompURLOld), defaultStompURL)
	}
	u, err := stompclient.ParseURL(raw)
	if err != nil {
		return nil, stompclient.Options{}, usageError(err)
	}
	o, err := f.tls.options(u)
	return u, o, err
}

// tlsFlags are the TLS flags of one STOMP connection, named with a prefix ("" for
// --ca-file..., "from-" for --from-ca-file...).
type tlsFlags struct {
	prefix                    string
	caFile, certFile, keyFile string
	insecure                  bool
}

func (f *tlsFlags) register(fs *pflag.FlagSet, prefix, whose string) {
	f.prefix = prefix
	fs.StringVar(&f.caFile, prefix+"ca-file", "", "PEM file of the CAs that verify "+whose+"'s certificate (default: the system's)")
	fs.StringVar(&f.certFile, prefix+"cert-file", "", "PEM client certificate, for "+whose+" if it asks for one (needs --"+prefix+"key-file)")
	fs.StringVar(&f.keyFile, prefix+"key-file", "", "PEM key of --"+prefix+"cert-file")
	fs.BoolVar(&f.insecure, prefix+"insecure-skip-verify", false, "do not verify "+whose+"'s certificate (testing only: anyone on the path can read and change the traffic)")
}

// options are the dial options of u the flags say; every error is a usage error.
func (f *tlsFlags) options(u *stompclient.URL) (stompclient.Options, error) {
	var o stompclient.Options
	p := "--" + f.prefix
	if !u.TLS() {
		if f.caFile != "" || f.certFile != "" || f.keyFile != "" || f.insecure {
			return o, usagef("%sca-file, %scert-file, %skey-file and %sinsecure-skip-verify need a stomp+ssl:// or wss:// URL, not %s", p, p, p, p, u)
		}
		return o, nil
	}
	cfg := &tls.Config{InsecureSkipVerify: f.insecure, MinVersion: tls.VersionTLS12} //nolint:gosec // only on request
	if f.caFile != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			return o, usagef("%sca-file: %w", p, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return o, usagef("%sca-file %s: no PEM certificate in it", p, f.caFile)
		}
	}
	if (f.certFile == "") != (f.keyFile == "") {
		return o, usagef("%scert-file and %skey-file go together", p, p)
	}
	if f.certFile != "" {
		cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
		if err != nil {
			return o, usagef("%scert-file/%skey-file: %w", p, p, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	o.TLS = cfg
	return o, nil
}

// progressOptions are where the command's progress goes; bar allows a bar on a
// terminal.
func (f *stompFlags) progressOptions(cmd *cobra.Command, bar bool) progressOptions {
	return progressOptions{out: cmd.ErrOrStderr(), interval: f.progress, bar: bar}
}

// stompDestination is a destination argument as STOMP names it: /queue/X, /topic/X
// (and the broker's other prefixes) as they are; ActiveMQ's queue://X and topic://X
// are translated.
func stompDestination(arg string) (string, error) {
	parts := strings.Split(arg, ",")
	for i, p := range parts {
		switch {
		case strings.HasPrefix(p, "queue://"), strings.HasPrefix(p, "topic://"), strings.HasPrefix(p, "/"):
		default:
			return "", usagef("destination %q: write /queue/NAME or /topic/NAME (or queue://NAME, topic://NAME; a comma joins several)", arg)
		}
		n, err := destinations.ParseOne(p)
		if err != nil {
			return "", usagef("destination %q: %v", arg, err)
		}
		parts[i] = n.String()
	}
	return strings.Join(parts, ","), nil
}

// parseHeaders reads name=value flags into a header list; reserved names are the
// command's own and refused.
func parseHeaders(flag string, kvs []string, reserved ...string) (*frame.Header, error) {
	h := &frame.Header{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--%s %q: write name=value", flag, kv)
		}
		for _, r := range reserved {
			if k == r {
				return nil, usagef("--%s %s: the command sets %s itself", flag, kv, r)
			}
		}
		h.Add(k, v)
	}
	return h, nil
}

// signalContext is the command's context, cancelled by SIGINT or SIGTERM.
func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
}
