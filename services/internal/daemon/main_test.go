package daemon

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMainProcess is the daemon TestMainExitsAsItsRunEnds starts: Main with
// a run that returns what DAEMON_MAIN_RUN names.
func TestMainProcess(t *testing.T) {
	run := map[string]func() error{
		"ok":   func() error { return nil },
		"help": func() error { return flag.ErrHelp },
		"fail": func() error { return errors.New("no --listen") },
	}[os.Getenv("DAEMON_MAIN_RUN")]
	if run == nil {
		t.Skip("started by TestMainExitsAsItsRunEnds")
	}
	Main("satx", run)
	os.Exit(7) // Main returned (the run ended well): 7 tells the test it did
}

func TestMainExitsAsItsRunEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts processes")
	}
	for run, want := range map[string]struct {
		code   int
		stderr string
	}{"ok": {7, ""}, "help": {0, ""}, "fail": {2, "satx: no --listen\n"}} {
		c := exec.Command(os.Args[0], "-test.run", "^TestMainProcess$")
		c.Env = append(os.Environ(), "DAEMON_MAIN_RUN="+run)
		var stderr strings.Builder
		c.Stderr = &stderr
		err := c.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != want.code || stderr.String() != want.stderr {
			t.Errorf("run %s: exit %d, stderr %q; want %d, %q", run, code, stderr.String(), want.code, want.stderr)
		}
	}
}
