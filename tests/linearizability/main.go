// Command lincheck checks that a history of whole-block reads and writes
// on a bftblk disk is linearizable: every block behaves as an atomic
// register that starts as zeros.  It uses the Porcupine checker with the
// history partitioned by block.
//
// Input: JSON lines, one operation each:
//
//	{"client": 3, "op": "w", "block": 2, "value": "c3s17",
//	 "call": 123, "ret": 456, "ok": true}
//
// value is an opaque id (string or integer); "0" (or 0) is the zeros
// value every block starts with.  call and ret are times in ns from one
// clock.  A failed read (ok false) is dropped; a failed write may or may
// not have taken effect, at any time after its call.
//
// Exit status: 0 linearizable, 1 not, 2 bad usage or input, 3 the check
// did not finish within -timeout.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

const (
	exitOK      = 0
	exitIllegal = 1
	exitUsage   = 2
	exitTimeout = 3
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("lincheck", flag.ContinueOnError)
	viz := fs.String("viz", "", "write an HTML visualization of the "+
		"first illegal block to `FILE`")
	timeout := fs.Duration("timeout", time.Minute, "give up (exit 3) "+
		"after this long")
	verbose := fs.Bool("v", false, "print every block's result")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: lincheck [-viz FILE] "+
			"[-timeout D] [-v] HISTORY.jsonl...\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() == 0 || *timeout <= 0 {
		fs.Usage()
		return exitUsage
	}
	var ops []Op
	for _, path := range fs.Args() {
		h, err := ReadHistoryFile(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "lincheck: %v\n", err)
			return exitUsage
		}
		ops = append(ops, h...)
	}
	if len(ops) == 0 {
		fmt.Fprintf(os.Stderr, "lincheck: the history is empty\n")
		return exitUsage
	}
	start := time.Now()
	blocks := Prepare(ops)
	results := Check(blocks, *timeout)
	return report(blocks, results, *viz, *timeout, time.Since(start),
		*verbose)
}

func report(blocks []Block, results []BlockResult, viz string,
	timeout, took time.Duration, verbose bool) int {
	var w, r, fw, dropped int

	for _, b := range blocks {
		w += b.Writes
		r += b.Reads
		fw += b.FailedWrites
		dropped += b.Dropped
	}
	summary := fmt.Sprintf("%d blocks: %d acknowledged writes, %d reads, %d failed "+
		"writes that some read saw, %d failed ops dropped", len(blocks),
		w, r, fw, dropped)
	if verbose {
		for _, res := range results {
			fmt.Printf("lincheck: block %d: %d ops: %s in %v\n",
				res.Block.Block, len(res.Ops), res.Result,
				res.Took.Round(time.Millisecond))
		}
	}
	last := results[len(results)-1]
	switch last.Result {
	case porcupine.Ok:
		fmt.Printf("lincheck: linearizable: %s (checked in %v)\n",
			summary, took.Round(time.Millisecond))
		return exitOK
	case porcupine.Unknown:
		fmt.Printf("lincheck: UNKNOWN: the check of block %d did not "+
			"finish within %v (%d of %d blocks done); record a "+
			"smaller history or raise -timeout: %s\n",
			last.Block.Block, timeout, len(results)-1, len(blocks),
			summary)
		return exitTimeout
	}
	fmt.Printf("lincheck: NOT LINEARIZABLE: block %d (%d ops): %s\n",
		last.Block.Block, len(last.Ops), last.Explain)
	fmt.Printf("lincheck: history: %s\n", summary)
	if viz != "" {
		if err := Visualize(last.Block, timeout, viz); err != nil {
			fmt.Fprintf(os.Stderr, "lincheck: cannot write %s: %v\n",
				viz, err)
		} else {
			fmt.Printf("lincheck: visualization of block %d: %s\n",
				last.Block.Block, viz)
		}
	}
	return exitIllegal
}
