package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/activemq-go/broker/admin"
	"github.com/activemq-go/broker/admin/console"
	adminmetrics "github.com/activemq-go/broker/admin/metrics"
	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/broker/sharedmode"
	"github.com/activemq-go/broker/config"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/gctune"
	"github.com/activemq-go/broker/internal/stompcodec"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
	"github.com/activemq-go/broker/transport"
	"github.com/activemq-go/broker/transport/openwire"
	"github.com/activemq-go/broker/transport/stomp"
)

func newServeCommand() *cobra.Command {
	var configPath, logLevel, logFormat, cpuProfile, heapProfile, adminAddr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the broker",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(os.Stderr, logLevel, logFormat)
			if err != nil {
				return err
			}
			// Whatever a library writes through slog's default or the standard log
			// package comes out at the same level and in the same format.
			slog.SetDefault(log)
			cfg, err := config.Load(configPath)
			if err != nil {
				return err
			}
			warnIgnoredEnv(log, cfg.IgnoredEnv)
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			if heapProfile != "" {
				stopHeap, err := watchHeapProfile(ctx, heapProfile, log)
				if err != nil {
					return err
				}
				defer stopHeap()
			}
			// A broker's live heap is small next to what it allocates per second:
			// without a floor the collector runs every few milliseconds.
			defer gctune.Start(0).Stop()
			if cmd.Flags().Changed("admin-addr") || cmd.Flags().Changed("stats-addr") {
				cfg.Broker.AdminAddress = adminAddr
			}
			return serve(ctx, cfg, log)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "activemq-style.yaml", "configuration file")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "text (key=value) or json (one object a line)")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile to this file until shutdown")
	cmd.Flags().StringVar(&heapProfile, "heapprofile", "", "write a heap profile to this file on every SIGUSR1 (each replaces the last)")
	cmd.Flags().StringVar(&adminAddr, "admin-addr", "", `serve the admin listener (web console, REST API, /metrics, /stats) on this address, e.g. 127.0.0.1:8161; "" for none (overrides broker.adminAddress)`)
	cmd.Flags().StringVar(&adminAddr, "stats-addr", "", "older name of --admin-addr")
	_ = cmd.Flags().MarkDeprecated("stats-addr", "use --admin-addr")
	return cmd
}

// newLogger returns the one logger of the broker, writing to w: the broker, the
// transport, the store and the stream log all log through it.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		opts.ReplaceAttr = jsonDurations
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// serve runs the broker until ctx ends, then shuts down in order: stop accepting, close
// connections, flush and close the store.
var errLockLost = errors.New("stopped: the store lock was lost")

// errNodeLost ends a shared-queue node that lost its registration (see openShared).
var errNodeLost = errors.New("stopped: this shared-queue node lost its registration")

func serve(ctx context.Context, cfg *config.Config, log *slog.Logger) (err error) {
	if err := os.MkdirAll(cfg.Broker.DataDirectory, 0o755); err != nil {
		return fmt.Errorf("dataDirectory %s: %w", cfg.Broker.DataDirectory, err)
	}
	ready := &readiness{why: "starting: opening the store"}
	early := startEarlyHealth(cfg.Broker.AdminAddress, cfg.AdminTLSConfig(), ready, log)
	defer early.close()
	node, err := openShared(ctx, cfg, log)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("persistenceAdapter %s: %w", cfg.Persistence.Key, err)
	}
	var store persistence.Store
	if node != nil {
		store = sharedStore()
	} else {
		store, err = openStore(ctx, cfg, log)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("persistenceAdapter %s: %w", cfg.Persistence.Key, err)
	}
	// A store shared by several brokers (JDBC master/slave): wait as a standby, with the
	// transport connectors closed, until this broker holds the lock; stop serving at
	// once if it is lost.
	lost := make(chan struct{})
	if l, ok := store.(persistence.Locker); ok {
		log.Info("waiting for the store lock: standby, transport connectors closed until it is held")
		ready.set(false, "standby: waiting for the store lock (another broker is the master)")
		if err := l.Lock(ctx); err != nil {
			_ = store.Close()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("store lock: %w", err)
		}
		log.Info("store lock held: this broker is the master")
		ready.set(false, "starting: this broker holds the store lock, recovering")
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-l.Lost():
				ready.set(false, "stopping: the store lock was lost")
				log.Error("store lock lost: another broker may be master now; stopping at once")
				close(lost)
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	var shared sharedmode.Engine
	nodeLost := make(chan struct{})
	defer func() {
		select {
		case <-nodeLost:
			err = errNodeLost
		default:
		}
	}()
	if node != nil {
		shared = sharedNode{node}
		defer func() {
			if cerr := node.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("closing the shared queues' node: %w", cerr)
			}
		}()
		// A node that lost its registration holds no lease any more: it stops, as a
		// master that lost the store lock does, and its supervisor starts it again
		// (a new epoch).
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-node.Lost():
				ready.set(false, "stopping: this shared-queue node lost its registration")
				log.Error("shared queues: this node lost its registration (its leases go to the other nodes); stopping at once")
				close(nodeLost)
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	// The stream log is opened once this broker holds the store lock: a standby must
	// not take it from the master on the same machine.
	streams, err := openStreams(cfg, log)
	if err != nil {
		_ = store.Close()
		return err
	}
	closeStreams := streams.Close
	sec, err := newSecurity(cfg, log)
	if err != nil {
		_ = store.Close()
		_ = closeStreams()
		return fmt.Errorf("plugins: %w", err)
	}
	if sec != nil {
		defer sec.Close()
	}
	warnOpenConnectors(cfg, sec, log)
	b, err := broker.New(ctx, broker.Options{
		Name:                                  cfg.Broker.BrokerName,
		Store:                                 store,
		Logger:                                log,
		MemoryUsage:                           cfg.SystemUsage.MemoryUsage,
		StoreUsage:                            cfg.SystemUsage.StoreUsage,
		MaxTransactionSize:                    cfg.SystemUsage.MaxTransactionSize,
		MaxTransactionsPerConnection:          cfg.SystemUsage.MaxTransactionsPerConnection,
		MaxDestinations:                       cfg.SystemUsage.MaxDestinations,
		MaxSubscriptionsPerConnection:         cfg.SystemUsage.MaxSubscriptionsPerConnection,
		MaxDurableSubscriptions:               cfg.SystemUsage.MaxDurableSubscriptions,
		MaxTemporaryDestinationsPerConnection: cfg.SystemUsage.MaxTemporaryDestinationsPerConnection,
		DestinationGCPeriod:                   destinationGCPeriod(cfg.DestinationPolicy),
		NoSpaceWait:                           noSpaceWait(cfg.SystemUsage),
		Policies:                              destinations.Policies(cfg.DestinationPolicy),
		ExpirySweep:                           expirySweep(cfg.DestinationPolicy),
		VirtualTopics: broker.VirtualTopics{
			Enabled: cfg.VirtualTopics.Enabled,
			Name:    cfg.VirtualTopics.Name,
			Prefix:  cfg.VirtualTopics.Prefix,
		},
		Scheduler:                              cfg.Broker.SchedulerSupport,
		SchedulerMemoryLimit:                   cfg.SystemUsage.SchedulerMemoryLimit,
		DurableSweep:                           cfg.Broker.OfflineDurableSubscriberTaskSchedule,
		LinkStealing:                           cfg.Broker.AllowLinkStealing,
		Streams:                                streams.Log(),
		Security:                               sec,
		PopulateJMSXUserID:                     cfg.Broker.PopulateJMSXUserID,
		UseAuthenticatedPrincipalForJMSXUserID: cfg.Broker.UseAuthenticatedPrincipalForJMSXUserID,
		AdvisorySupport:                        cfg.Broker.AdvisorySupport,
		ClientIDOwnership:                      cfg.Plugins.ClientIDOwnership,
		Shared:                                 shared,
	})
	if err != nil {
		_ = store.Close()
		_ = closeStreams()
		return err
	}
	srv := transport.NewServer(b, log)
	srv.MaxPendingLogins = cfg.Broker.MaxPendingLogins
	srv.Bound = func(addrs []net.Addr) {
		b.SetAdvisoryURL(advisoryURL(cfg.TransportConnectors[0], addrs[0]))
	}
	conns, err := connectors(cfg, log)
	if err == nil {
		err = srv.Listen(conns)
	}
	if err != nil {
		_ = b.Close()
		_ = closeStreams()
		return err
	}
	var adminSrv *admin.Server
	if addr := cfg.Broker.AdminAddress; addr != "" {
		addr = early.handOver(addr)
		adminSrv, err = startAdmin(addr, cfg, b, store, sec, ready.get, log)
		if err != nil {
			_ = srv.Shutdown(context.Background())
			_ = b.Close()
			_ = closeStreams()
			return fmt.Errorf("broker.adminAddress %s: %w", addr, err)
		}
	}
	ready.set(true, "ready")
	log.Info("broker started", slog.String("brokerName", cfg.Broker.BrokerName),
		slog.String("persistenceAdapter", cfg.Persistence.Key), slog.String("config", cfg.Source))

	<-ctx.Done()
	if ok, _ := ready.get(); ok {
		ready.set(false, "stopping")
	}
	log.Info("shutting down")
	defer func() {
		select {
		case <-lost:
			err = errLockLost
		default:
		}
	}()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if adminSrv != nil {
		// No operator's request may start once connections are closing.
		actx, acancel := context.WithTimeout(sctx, 5*time.Second)
		if err := adminSrv.Shutdown(actx); err != nil {
			log.Warn("admin requests did not end in time", slog.Any("err", err))
		}
		acancel()
	}
	serr := srv.Shutdown(sctx)
	if serr != nil {
		log.Warn("connections did not close in time", slog.Any("err", serr))
	}
	cerr := b.Close()
	// The broker has written its last stream appends and group offsets by now.
	if err := closeStreams(); err != nil {
		log.Error("closing the stream log failed", slog.Any("err", err))
		if cerr == nil {
			return fmt.Errorf("closing streams: %w", err)
		}
	}
	if cerr != nil {
		select {
		case <-lost: // the store refuses writes once the lock is gone
		default:
			return fmt.Errorf("closing store: %w", cerr)
		}
	}
	log.Info("broker stopped")
	return nil
}

// openStore opens the configured persistence adapter; it logs through log.
func openStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (persistence.Store, error) {
	raw := cfg.Persistence.Options
	if cfg.Persistence.Adapter == "jdbc" {
		if _, set := raw["leaseholderid"]; !set {
			raw = maps.Clone(raw)
			raw["leaseholderid"] = cfg.Broker.BrokerName
		}
	}
	return persistence.Open(ctx, cfg.Persistence.Adapter, persistence.Options{
		DataDirectory: cfg.Broker.DataDirectory,
		Raw:           raw,
		Logger:        log,
	})
}

// connectors translates the configured connectors for the transport server. A TLS
// connector without a certificate (which config does not let through) is an error,
// never a plain-text listener.
func connectors(cfg *config.Config, log *slog.Logger) ([]transport.Connector, error) {
	out := make([]transport.Connector, 0, len(cfg.TransportConnectors))
	for _, c := range cfg.TransportConnectors {
		lim := stompcodec.DefaultLimits()
		lim.MaxFrameSize = min(c.MaxFrameSize, c.MaxDataLength)
		lim.MaxHeaders = c.MaxHeaders
		lim.MaxHeaderLine = c.MaxHeaderLength
		connectTimeout := c.ConnectTimeout
		if connectTimeout == 0 {
			connectTimeout = -1 // connectTimeout=0: no limit
		}
		out = append(out, transport.Connector{
			Name:           c.Name,
			Addr:           c.Addr,
			MaxConnections: c.MaxConnections,
			WebSocket:      c.WebSocket,
			AllowedOrigins: c.AllowedOrigins,
			AllowedHosts:   c.AllowedHosts,
			Session: stomp.Config{
				Limits:                  lim,
				MaxFrameSizeBeforeLogin: c.MaxFrameSizeBeforeLogin,
				ConnectTimeout:          connectTimeout,
				HeartBeatGrace:          c.HeartBeatGrace,
				DefaultHeartBeat:        c.DefaultHeartBeat,
				Logger:                  log,
			},
		})
		if c.OpenWire {
			inactivity := c.MaxInactivityDuration
			if inactivity == 0 {
				inactivity = -1 // maxInactivityDuration=0: never dropped for silence
			}
			out[len(out)-1].OpenWire = &openwire.Config{
				MaxFrameSize:            c.MaxFrameSize,
				MaxFrameSizeBeforeLogin: c.MaxFrameSizeBeforeLogin,
				MaxInactivityDuration:   inactivity,
				InitialDelay:            c.MaxInactivityInitialDelay,
				ConnectTimeout:          c.ConnectTimeout,
				Logger:                  log,
			}
		}
		if c.TLS {
			tc := cfg.SSLContext.ConnectorTLS(c)
			if tc == nil {
				return nil, fmt.Errorf("transportConnectors %s: TLS connector without a certificate in sslContext", c.Name)
			}
			out[len(out)-1].TLS = tc
		}
	}
	return out, nil
}

// advisoryURL is the originBrokerURL of advisories: the first connector's scheme and
// the address it listens on, as ActiveMQ gives its connector's connect string.
func advisoryURL(c config.Connector, addr net.Addr) string {
	scheme, _, _ := strings.Cut(c.URI, "://")
	return scheme + "://" + addr.String()
}

// noSpaceWait maps ActiveMQ's two flow-control settings onto broker.Options.NoSpaceWait:
// a positive sendFailIfNoSpaceAfterTimeout wins, whatever sendFailIfNoSpace says.
func noSpaceWait(u config.SystemUsage) time.Duration {
	switch {
	case u.SendFailIfNoSpaceAfterTimeout > 0:
		return u.SendFailIfNoSpaceAfterTimeout
	case u.SendFailIfNoSpace:
		return 0
	}
	return -1
}

// startAdmin starts the admin listener on addr: the REST API, /stats, the login page,
// the health endpoints (/readyz asks ready), and what the console and the metrics mount.
func startAdmin(addr string, cfg *config.Config, b *broker.Broker, store persistence.Store, sec *security.Service, ready func() (bool, string), log *slog.Logger) (*admin.Server, error) {
	be := admin.NewBrokerBackend(b, admin.BrokerInfo{Adapter: cfg.Persistence.Key, Store: store, Security: sec})
	s, err := admin.New(admin.Options{
		Backend: be, Security: sec, Logger: log,
		Metrics: adminmetrics.Handler(b.Management(), adminmetrics.Options{
			Store:                cfg.Persistence.Adapter,
			Security:             sec,
			PerDestination:       cfg.Metrics.PerDestination,
			MaxDestinationSeries: cfg.Metrics.MaxDestinationSeries,
			Logger:               log,
		}),
		Console:         func(s *admin.Server) { console.New(be, consoleSession{}).Mount(s.Handle, s.HandlePublic) },
		LoginStylesheet: console.StaticPrefix + "console.css",
		MonitorGroups:   cfg.Broker.MonitorGroups,
		AllowedHosts:    cfg.Broker.AdminAllowedHosts,
		TLS:             cfg.AdminTLSConfig(),
		Ready:           ready,
	})
	if err != nil {
		return nil, err
	}
	if _, err := s.Listen(addr); err != nil {
		return nil, err
	}
	return s, nil
}

// consoleSession is the console's view of the admin listener's login session.
type consoleSession struct{}

func (consoleSession) User(r *http.Request) string      { return admin.User(r) }
func (consoleSession) CSRFToken(r *http.Request) string { return admin.CSRFToken(r) }

// CheckCSRF accepts a form carrying the session's token; a POST with HTTP Basic
// credentials and no session has none, and is refused.
func (consoleSession) CheckCSRF(r *http.Request) bool {
	want := admin.CSRFToken(r)
	return want != "" && subtle.ConstantTimeCompare([]byte(r.PostFormValue(console.CSRFField)), []byte(want)) == 1
}
