package cache

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"sync"
)

var hostDesc = sync.OnceValue(func() string {
	id := runtime.GOOS + "/" + runtime.GOARCH
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return id
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		switch k {
		case "vendor_id", "model name", "flags", "Features", "CPU implementer", "CPU part", "isa":
			if !seen[k] {
				seen[k] = true
				id += "\n" + k + ":" + strings.TrimSpace(v)
			}
		}
	}
	return id
})

var hostOnce = sync.OnceValue(func() string { return sha256Hex([]byte(hostDesc())) })

// HostDescription is the text HostID hashes: "os/arch", then one
// "key:value" line each for the CPU's vendor, model and feature flags.
func HostDescription() string { return hostDesc() }

// HostID identifies the machine kind kernels are compiled for: OS,
// architecture, and the CPU vendor, model and feature flags of the first
// processor in /proc/cpuinfo when readable (code built with -march=native
// must not be loaded on a CPU lacking its instructions).
func HostID() string { return hostOnce() }
