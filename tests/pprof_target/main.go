// A small Go service for perfkit's pprof tests: serves net/http/pprof on 127.0.0.1 (port from
// argv[1], 0 = any; the chosen port is printed on stdout), keeps one goroutine hashing and one
// allocating with short sleeps so profiles have something in them without eating both CPUs.
// A second argument "md5" adds an MD5-hashing goroutine (a changed setting, for differential profiles);
// "lock" 8 goroutines on one mutex instead of the SHA-256 one, "lock-own" the same 8 each on its own
// (profile.hotspots' lock family).
// It also answers /debug/zip?seconds=N the way TiDB's status server does (server/http_status.go):
// one zip with goroutine (debug=2 text), heap and mutex profiles, a CPU profile over N seconds,
// the config (JSON) and the version.
package main

import (
	"archive/zip"
	"crypto/md5"
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	rpprof "runtime/pprof"
	"strconv"
	"sync"
	"time"
)

func debugZip(w http.ResponseWriter, r *http.Request) {
	seconds, err := strconv.Atoi(r.FormValue("seconds"))
	if err != nil || seconds <= 0 {
		seconds = 10
	}
	w.Header().Set("Content-Disposition", `attachment; filename="tidb_debug.zip"`)
	zw := zip.NewWriter(w)
	defer zw.Close()
	for _, item := range []struct {
		name  string
		debug int
	}{{"goroutine", 2}, {"heap", 0}, {"mutex", 0}} {
		fw, err := zw.Create(item.name)
		if err != nil {
			return
		}
		_ = rpprof.Lookup(item.name).WriteTo(fw, item.debug)
	}
	fw, err := zw.Create("profile")
	if err != nil {
		return
	}
	if err := rpprof.StartCPUProfile(fw); err != nil {
		_, _ = fmt.Fprintln(fw, err)
	} else {
		time.Sleep(time.Duration(seconds) * time.Second)
		rpprof.StopCPUProfile()
	}
	if fw, err = zw.Create("config"); err == nil {
		_, _ = fmt.Fprintln(fw, `{"status": {"status-port": 10080}}`)
	}
	if fw, err = zw.Create("version"); err == nil {
		_, _ = fmt.Fprintln(fw, "pprof-target for perfkit tests; go", runtime.Version())
	}
}

var sink [][]byte

// what the lock goroutines count, one slot each (in a global: the loop stays)
var counts [8]uint64

func main() {
	runtime.SetMutexProfileFraction(5)
	mode := ""
	if len(os.Args) > 2 {
		mode = os.Args[2]
	}
	locks := mode == "lock" || mode == "lock-own"
	if !locks { // the lock modes' goroutines are the whole CPU profile
		go func() {
			buf := make([]byte, 4096)
			for {
				sum := sha256.Sum256(buf)
				buf[0] = sum[0]
			}
		}()
	}
	// "md5" as the second argument adds a goroutine hashing with MD5: the same program with one
	// setting changed, for differential profiles (tests/fixtures/pprof: go1.26-cpu-md5-*.pb.gz)
	if mode == "md5" {
		go func() {
			buf := make([]byte, 4096)
			for {
				sum := md5.Sum(buf)
				buf[0] = sum[0]
			}
		}()
	}
	// "lock" as the second argument: 8 goroutines taking one sync.Mutex for a few ns each, over and
	// over (a lock convoy: a global mutex on a hot path), instead of the hashing; "lock-own" the same
	// goroutines, each with a mutex of its own (the control: the same work, nothing shared)
	if locks {
		shared := new(sync.Mutex)
		for i := 0; i < 8; i++ {
			mu := shared
			if mode == "lock-own" {
				mu = new(sync.Mutex)
			}
			go func() {
				for {
					mu.Lock()
					counts[i]++
					mu.Unlock()
				}
			}()
		}
	}
	go func() {
		for {
			sink = append(sink, make([]byte, 64<<10))
			if len(sink) > 64 {
				sink = sink[:0]
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	http.HandleFunc("/debug/zip", debugZip)
	port := "0"
	if len(os.Args) > 1 {
		port = os.Args[1]
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	_ = http.Serve(ln, nil)
}
