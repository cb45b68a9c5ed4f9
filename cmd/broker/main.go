// Command broker runs the message broker and its client tools.
//
//	broker                      serve with ./activemq-style.yaml
//	broker serve --config FILE  serve with another configuration file
//	broker bench ...            drive any STOMP broker and report msgs/s and latency
//	broker passwd               print a password hash for the configuration's users
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := newRootCommand()
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	serve := newServeCommand()
	root := &cobra.Command{
		Use:           "broker",
		Short:         "STOMP message broker with ActiveMQ-compatible semantics",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE:          serve.RunE,
	}
	root.Flags().AddFlagSet(serve.Flags())
	root.AddCommand(serve, newBenchCommand(), newPasswdCommand())
	return root
}
