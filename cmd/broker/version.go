package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/activemq-go/broker/internal/buildinfo"
)

// newVersionCommand is `broker version`: the build's version, commit, date and Go.
func newVersionCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the broker's version, commit, build date and Go version",
		Long: `Print the broker's version, the commit it was built from (-dirty: with
uncommitted changes), its build date (a release build's) or its commit's date, and the
Go version and platform. The admin API's GET /api/broker, the console's footer and the
broker_build_info metric say the same. --json prints it as an object.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := buildinfo.Get()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(in)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), in)
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return c
}
