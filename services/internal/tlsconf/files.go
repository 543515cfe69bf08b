package tlsconf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/satpage/satpage/services/internal/errs"
)

// WriteOwnerOnly replaces path atomically with b, readable by its owner only
// (a key or certificate a pod's start writes for its satnode: a reader never
// sees half a file).
func WriteOwnerOnly(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %v: %w", path, err, errs.ErrInvalid)
	}
	_, err = tmp.Write(b)
	err = errors.Join(err, tmp.Chmod(0o400), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %v: %w", path, err, errs.ErrInvalid)
	}
	return nil
}
