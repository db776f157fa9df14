// keyplan corpus recorder for redigo, the part for versions with DoWithTimeout (see
// keyplan_record.go; overlay.py adds this file only where conn has that method).

package redis

import "time"

func (c *conn) DoWithTimeout(readTimeout time.Duration, cmd string, args ...interface{}) (interface{}, error) {
	r, err := c.kpDoWithTimeout(readTimeout, cmd, args...)
	kpFlushed(c, cmd != "")
	return r, err
}
