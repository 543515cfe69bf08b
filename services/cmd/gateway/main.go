// Command gateway is the ground entry point (wiring only; logic in internal/).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "gateway: not built yet (issue 8)")
	os.Exit(2)
}
