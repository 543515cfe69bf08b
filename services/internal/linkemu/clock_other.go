//go:build !linux

package linkemu

// newWakeClock is a runtime timer where there is no timerfd: holds end up to
// the runtime poller's millisecond step late in an idle process.
func newWakeClock() wakeClock { return newTimerClock() }
