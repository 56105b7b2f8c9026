package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
)

// ZeroValue is the value id of a block nobody has written: all zeros.
const ZeroValue = "0"

// Forever is the return time of a write whose outcome is unknown.  With
// it the write is concurrent with everything after its call, so it may
// take effect at any point after that, or (placed after every other
// operation) in effect never.
const Forever = int64(math.MaxInt64)

// Op is one operation of a history, as recorded.
type Op struct {
	Client int
	Write  bool
	Block  int64
	Value  string
	Call   int64
	Ret    int64
	OK     bool
	Where  string // file:line, for messages
}

// record is one line of the input.  Pointers tell a missing field from a
// zero one: every field that matters must be given.
type record struct {
	Client *int            `json:"client"`
	Op     *string         `json:"op"`
	Block  *int64          `json:"block"`
	Value  json.RawMessage `json:"value"`
	Call   *int64          `json:"call"`
	Ret    *int64          `json:"ret"`
	OK     *bool           `json:"ok"`
}

// valueID turns a value id given as a JSON string or integer into its
// canonical string, so that 0 and "0" are the same value.
func valueID(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", fmt.Errorf("missing value")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		if s == "" {
			return "", fmt.Errorf("empty value id")
		}
		return s, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return "", fmt.Errorf("value %s is neither a string nor an "+
			"integer", raw)
	}
	return strconv.FormatInt(n, 10), nil
}

// parseRecord checks one line and turns it into an Op.
func parseRecord(line []byte, where string) (Op, error) {
	var r record
	var op Op

	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&r); err != nil {
		return op, fmt.Errorf("%s: %v", where, err)
	}
	if dec.More() {
		return op, fmt.Errorf("%s: trailing data after the object", where)
	}
	if r.Client == nil || r.Op == nil || r.Block == nil || r.Call == nil ||
		r.OK == nil {
		return op, fmt.Errorf("%s: client, op, block, call and ok are "+
			"required", where)
	}
	op = Op{Client: *r.Client, Block: *r.Block, Call: *r.Call, OK: *r.OK,
		Where: where}
	switch *r.Op {
	case "w":
		op.Write = true
	case "r":
	default:
		return op, fmt.Errorf("%s: op must be \"w\" or \"r\", not %q",
			where, *r.Op)
	}
	if op.Client < 0 || op.Block < 0 || op.Call < 0 {
		return op, fmt.Errorf("%s: negative client, block or call", where)
	}
	// A failed read says nothing; a failed write's return time is not
	// when it took effect, so neither needs one.
	if !op.OK {
		if op.Write {
			v, err := valueID(r.Value)
			if err != nil {
				return op, fmt.Errorf("%s: %v", where, err)
			}
			op.Value = v
		}
		op.Ret = Forever
		return op, nil
	}
	if r.Ret == nil {
		return op, fmt.Errorf("%s: ret is required when ok", where)
	}
	op.Ret = *r.Ret
	if op.Ret < op.Call || op.Ret == Forever {
		return op, fmt.Errorf("%s: ret %d is before call %d", where,
			op.Ret, op.Call)
	}
	v, err := valueID(r.Value)
	if err != nil {
		return op, fmt.Errorf("%s: %v", where, err)
	}
	op.Value = v
	return op, nil
}

// ReadHistory reads a JSON-lines history; blank lines are skipped.
func ReadHistory(r io.Reader, name string) ([]Op, error) {
	var ops []Op

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		op, err := parseRecord(line, fmt.Sprintf("%s:%d", name, n))
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return ops, nil
}

// ReadHistoryFile reads one history file.
func ReadHistoryFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadHistory(f, path)
}

// Block is the part of a history on one block, ready to check.
type Block struct {
	Block        int64
	Ops          []Op // what is checked
	Writes       int
	Reads        int
	FailedWrites int // kept: some read returned their value
	Dropped      int // failed reads, and failed writes nobody read
}

// Prepare drops what cannot matter and splits the history by block.
//
// A failed read returned nothing.  A failed write whose value no read
// returned can always be placed after every other operation, where it
// changes no read, so a history is linearizable with it exactly when it
// is without it: dropping it only saves the checker a branch at every
// step.  A failed write whose value some read returned stays, with its
// return time at Forever.
func Prepare(ops []Op) []Block {
	byBlock := map[int64]*Block{}
	read := map[int64]map[string]bool{}

	for _, op := range ops {
		if !op.Write && op.OK {
			if read[op.Block] == nil {
				read[op.Block] = map[string]bool{}
			}
			read[op.Block][op.Value] = true
		}
	}
	for _, op := range ops {
		b := byBlock[op.Block]
		if b == nil {
			b = &Block{Block: op.Block}
			byBlock[op.Block] = b
		}
		switch {
		case !op.OK && (!op.Write || !read[op.Block][op.Value]):
			b.Dropped++
			continue
		case !op.OK:
			b.FailedWrites++
		case op.Write:
			b.Writes++
		default:
			b.Reads++
		}
		b.Ops = append(b.Ops, op)
	}
	blocks := make([]Block, 0, len(byBlock))
	for _, b := range byBlock {
		blocks = append(blocks, *b)
	}
	sort.Slice(blocks, func(i, j int) bool {
		return blocks[i].Block < blocks[j].Block
	})
	return blocks
}
