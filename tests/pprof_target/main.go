// A small Go service for perfkit's pprof tests: serves net/http/pprof on 127.0.0.1 (port from
// argv[1], 0 = any; the chosen port is printed on stdout), keeps one goroutine hashing and one
// allocating with short sleeps so profiles have something in them without eating both CPUs.
package main

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"time"
)

var sink [][]byte

func main() {
	runtime.SetMutexProfileFraction(5)
	go func() {
		buf := make([]byte, 4096)
		for {
			sum := sha256.Sum256(buf)
			buf[0] = sum[0]
		}
	}()
	go func() {
		for {
			sink = append(sink, make([]byte, 64<<10))
			if len(sink) > 64 {
				sink = sink[:0]
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
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
