package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/activemq-go/broker/migrate/xmlconfig"
)

// newConfigCommand is `broker config`, holding the configuration tools.
func newConfigCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Configuration tools (check a configuration, import activemq.xml)",
		Args:  usageArgs(cobra.NoArgs),
	}
	c.AddCommand(newConfigImportCommand(), newConfigCheckCommand())
	return c
}

// newConfigImportCommand is `broker config import activemq.xml [-o FILE]`.
func newConfigImportCommand() *cobra.Command {
	var out, report, base, conf, data, login string
	c := &cobra.Command{
		Use:   "import activemq.xml",
		Short: "Convert ActiveMQ's activemq.xml (or .xml.gz) into activemq-style.yaml",
		Long: `Convert ActiveMQ's activemq.xml into the broker's YAML configuration.

The YAML goes to -o (default stdout), the report to --report (default stderr): each
element and attribute is "converted", "converted with a difference: ..." or "not
supported: why", followed by the environment variables the YAML's placeholders read
and the commands that turn key stores into the PEM files sslContext names.

${activemq.base} and ${activemq.data} (the store) default to the output file's
directory and data/ in it, never to the XML's directory; the PEM files made from key
stores are named next to the output too. The report ends with the connectors that
listen differently from the XML and whether the YAML starts as written.

Exit status: 0 converted (whatever the report says); 1 the XML does not parse, has
no <broker> element, or a value cannot be converted safely; 2 usage error.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := readMaybeGzip(args[0])
			if err != nil {
				return err
			}
			abs, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			outDir, err := outputDir(out)
			if err != nil {
				return err
			}
			if base == "" {
				base = outDir
			}
			if conf == "" {
				conf = filepath.Dir(abs) // where ActiveMQ's key stores and login.config are read
			}
			res, err := xmlconfig.Convert(in, xmlconfig.Options{Base: base, Conf: conf, Data: data, OutDir: outDir,
				LoginConfig: login, Source: args[0]})
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			var rw io.Writer = cmd.ErrOrStderr()
			if report != "" {
				f, err := os.Create(report)
				if err != nil {
					return err
				}
				defer f.Close()
				rw = f
			}
			if err := res.WriteReport(rw); err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(res.YAML)
				return err
			}
			return os.WriteFile(out, res.YAML, 0o600)
		},
	}
	f := c.Flags()
	f.StringVarP(&out, "output", "o", "", "YAML file to write (default stdout)")
	f.StringVar(&report, "report", "", "file to write the report to (default stderr)")
	f.StringVar(&base, "activemq-base", "", "${activemq.base} and ${activemq.home} (default the output file's directory, or the working directory for stdout)")
	f.StringVar(&conf, "activemq-conf", "", "${activemq.conf}, where key stores and login.config are read (default the XML file's directory)")
	f.StringVar(&data, "activemq-data", "", "${activemq.data}, the store's directory (default data/ under --activemq-base)")
	f.StringVar(&login, "login-config", "", "JAAS login.config a jaasAuthenticationPlugin reads")
	return c
}

// outputDir is the absolute directory the YAML goes to: -o's, or the working
// directory for stdout.
func outputDir(out string) (string, error) {
	if out == "" || out == "-" {
		return os.Getwd()
	}
	abs, err := filepath.Abs(out)
	return filepath.Dir(abs), err
}

// readMaybeGzip reads a file, gunzipping a .gz one.
func readMaybeGzip(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return b, err
	}
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer z.Close()
	return io.ReadAll(z)
}
