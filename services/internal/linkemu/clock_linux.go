package linkemu

import (
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fdClock is a timerfd (CLOCK_REALTIME, absolute: the instants are wall ns)
// watched by the runtime's poller: the kernel's high-resolution timer wakes
// the poller within microseconds of the instant, where a runtime timer alone
// fires up to a millisecond late in an idle process (its poller sleeps in
// whole milliseconds), and no thread sleeps in the kernel for it. Setting it
// is the one system call per instant: the descriptor is never read (the
// poller is edge-triggered, and every expiry after a setting is a new edge).
type fdClock struct {
	fd int
	f  *os.File // the same descriptor, registered with the poller
	rc syscall.RawConn
	at atomic.Int64 // the instant set
}

// newWakeClock is a timerfd, or a runtime timer where none can be made.
func newWakeClock() wakeClock {
	fd, err := unix.TimerfdCreate(unix.CLOCK_REALTIME, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTimerClock()
	}
	f := os.NewFile(uintptr(fd), "linkemu-timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return newTimerClock()
	}
	return &fdClock{fd: fd, f: f, rc: rc}
}

func (c *fdClock) set(at int64) {
	var v unix.ItimerSpec // zero: disarmed
	if at > 0 {
		v.Value = unix.NsecToTimespec(at)
	}
	c.at.Store(at)
	_ = unix.TimerfdSettime(c.fd, unix.TFD_TIMER_ABSTIME, &v, nil) // fails only on a bad descriptor
}

// wait parks in the poller until the timer's next expiry, unless the instant
// set has passed: the poller forgets an edge that came before the wait began
// (RawConn.Read resets it), and an expiry is never before its instant.
func (c *fdClock) wait() error {
	return c.rc.Read(func(uintptr) bool {
		at := c.at.Load()
		return at == 0 || time.Now().UnixNano() >= at
	})
}
