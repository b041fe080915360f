package main

import (
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// fileSecrets are the keys of mnemo.yaml that hold secrets (config.Env's
// Secret: the model's key and the registered platforms' tokens), with the
// variable that can hold each instead.
func fileSecrets() []config.EnvVar {
	var out []config.EnvVar
	for _, e := range config.Env(config.Default(registry.Platforms()...)) {
		if e.Secret {
			out = append(out, e)
		}
	}
	return out
}

// looseSecrets says, when the configuration file at path holds a secret
// and its group or other local users may read it, what is wrong and the
// fix; "" when nothing is (no file, modes 0600/0400, or no secret in it).
func looseSecrets(path string) string {
	if path == "" {
		return ""
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm()&0o044 == 0 {
		return ""
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	// The file was loaded already: only which secrets it sets matters.
	var f map[string]any
	if yaml.Unmarshal(data, &f) != nil {
		return ""
	}
	var keys, envs []string
	for _, s := range fileSecrets() {
		section, name, _ := strings.Cut(s.Key, ".")
		sec, _ := f[section].(map[string]any)
		if v, ok := sec[name].(string); ok && strings.TrimSpace(v) != "" {
			keys, envs = append(keys, s.Key), append(envs, s.Name)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	return fmt.Sprintf("%s holds %s and other local users can read it (mode %04o): run `chmod 600 %s`, or set %s in the environment instead",
		path, strings.Join(keys, ", "), info.Mode().Perm(), path, strings.Join(envs, ", "))
}
