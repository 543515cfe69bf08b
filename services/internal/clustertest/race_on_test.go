//go:build race

package clustertest_test

// raceEnabled: the race detector slows a 150-satellite cluster at R = 2 tenfold.
const raceEnabled = true
