package main

import (
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/spf13/cobra"

	"github.com/activemq-go/broker/config"
	"github.com/activemq-go/broker/persistence"
)

// newConfigCheckCommand is `broker config check [FILE]`.
func newConfigCheckCommand() *cobra.Command {
	var effective bool
	c := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a configuration without starting the broker",
		Long: `Validate a configuration file (default activemq-style.yaml) as serve does before it
opens the store, without starting anything: the YAML and its keys, ${VAR} placeholders
(an unset one without a default is an error), the BROKER_ variables, the TLS files of
sslContext, the users and properties files of plugins, the transport connectors and
the persistence adapter's name. Messages are the ones serve gives. The adapter's own
options are checked when it opens (serve).

--effective prints the configuration as the broker would use it: every key, defaults
filled in, placeholders and BROKER_ variables applied, secrets masked.

Exit status: 0 valid; 1 invalid; 2 usage error.`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "activemq-style.yaml"
			if len(args) == 1 {
				path = args[0]
			}
			if err := checkConfig(path, cmd.ErrOrStderr()); err != nil {
				return err
			}
			if effective {
				out, err := config.LoadEffective(path)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(out)
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s: valid\n", path)
			return err
		},
	}
	c.Flags().BoolVar(&effective, "effective", false, "print the effective configuration (secrets masked)")
	return c
}

// checkConfig validates the configuration at path the way serve does before it opens
// the store; warnings serve would log go to w.
func checkConfig(path string, w io.Writer) error {
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
	warnIgnoredEnv(log, cfg.IgnoredEnv)
	if !slices.Contains(persistence.Adapters(), cfg.Persistence.Adapter) {
		return fmt.Errorf("persistenceAdapter %s: %w: %q", cfg.Persistence.Key, persistence.ErrUnknownAdapter, cfg.Persistence.Adapter)
	}
	sec, err := newSecurity(cfg, log)
	if err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	if sec != nil {
		sec.Close()
	}
	if _, err := connectors(cfg, log); err != nil {
		return err
	}
	warnOpenConnectors(cfg, sec, log)
	return nil
}

// warnIgnoredEnv logs the BROKER_ variables the configuration ignored: the client
// commands' older variables with their new names, others as naming no section.
func warnIgnoredEnv(log *slog.Logger, names []string) {
	renamed := map[string]string{envStompURLOld: envStompURL, envAdminURLOld: envAdminURL}
	for _, name := range names {
		if to, ok := renamed[name]; ok {
			log.Warn("ignoring environment variable: it is the client commands' older name for "+to+" (rename it; the configuration's variables start with BROKER_)",
				slog.String("var", name))
			continue
		}
		log.Warn("ignoring environment variable: its first key names no configuration section", slog.String("var", name))
	}
}
