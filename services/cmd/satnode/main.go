// Command satnode is the satellite node daemon (wiring only; logic in internal/).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "satnode: not built yet (issue 8)")
	os.Exit(2)
}
