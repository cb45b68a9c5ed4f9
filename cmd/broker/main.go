// Command broker runs the message broker and its client tools.
//
//	broker                      serve with ./activemq-style.yaml
//	broker serve --config FILE  serve with another configuration file
//	broker bench ...            drive any STOMP broker and report msgs/s and latency
//	broker passwd               print a password hash for the configuration's users
//	broker send|consume|browse  send, receive and browse messages over STOMP
//	broker list|stat|purge|move manage destinations through the admin API
//	broker config import X.xml convert ActiveMQ's activemq.xml into the YAML configuration
//	broker migrate --from URL   move the messages of another STOMP broker's queues here
//	broker version              print the version, commit, build date and Go version
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/activemq-go/broker/internal/buildinfo"
)

func main() {
	root := newRootCommand()
	cmd, err := root.ExecuteC()
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		code := exitCode(err)
		if code == exitUsage && cmd != nil {
			fmt.Fprintf(os.Stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		os.Exit(code)
	}
}

func newRootCommand() *cobra.Command {
	serve := newServeCommand()
	root := &cobra.Command{
		Use:           "broker",
		Short:         "STOMP message broker with ActiveMQ-compatible semantics",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          usageArgs(cobra.NoArgs),
		RunE:          serve.RunE,
	}
	root.Flags().AddFlagSet(serve.Flags())
	root.Version = buildinfo.Get().Version
	root.SetVersionTemplate(buildinfo.Get().String() + "\n")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(serve, newBenchCommand(), newPasswdCommand(),
		newSendCommand(), newConsumeCommand(), newBrowseCommand(),
		newListCommand(), newStatCommand(), newPurgeCommand(), newMoveCommand(), newScheduledCommand(),
		newConfigCommand(), newMigrateCommand(), newVersionCommand())
	return root
}
