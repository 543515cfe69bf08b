// Command satcheck checks a history of page reads and writes recorded by
// `satpage cluster chaos` (satpage-history/1) for linearizability with
// Porcupine, one register per page, and prints one JSON object (wiring only;
// logic in internal/lincheck). Exit 0: linearizable; 1: not; 2: bad input.
//
//	satcheck [--timeout 60s] HISTORY.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/satpage/satpage/services/internal/lincheck"
)

func main() {
	timeout := flag.Duration("timeout", time.Minute, "give up on a page after this long (it is then reported unknown)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: satcheck [--timeout 60s] HISTORY.json")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "satcheck:", err)
		os.Exit(2)
	}
	h, err := lincheck.Read(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "satcheck: %s: %v\n", flag.Arg(0), err)
		os.Exit(2)
	}
	res := lincheck.Check(h, *timeout)
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if !res.Linearizable {
		os.Exit(1)
	}
}
