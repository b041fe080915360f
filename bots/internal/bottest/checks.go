package bottest

import "fmt"

// Checks records what a platform's section Validate asks of the
// configuration's checker (platform.Checker; cmd/internal/config
// implements it, and its tests hold the words), one line a call.
type Checks []string

func (c *Checks) Add(key, format string, args ...any) {
	*c = append(*c, key+": "+fmt.Sprintf(format, append([]any{key}, args...)...))
}
func (c *Checks) Label(key string) string { return key }
func (c *Checks) Token(key, v, prefix, _ string) {
	*c = append(*c, fmt.Sprintf("token %s %q %s", key, v, prefix))
}
func (c *Checks) URL(key, v string, required bool, _ string) {
	*c = append(*c, fmt.Sprintf("url %s %q %v", key, v, required))
}
func (c *Checks) OneOf(key, v string, allowed ...string) {
	*c = append(*c, fmt.Sprintf("oneOf %s %q %v", key, v, allowed))
}
func (c *Checks) IntRange(key string, v, lo, hi int, _ string) {
	*c = append(*c, fmt.Sprintf("range %s %d %d..%d", key, v, lo, hi))
}
func (c *Checks) Once(seen map[string]string, v, key, _ string) {
	if at, dup := seen[v]; dup {
		*c = append(*c, fmt.Sprintf("twice %s %s", key, at))
	}
	seen[v] = key
}
func (c *Checks) Access(platform, mode string, allow []string, _ string) {
	*c = append(*c, fmt.Sprintf("access %s %s %v", platform, mode, allow))
}
