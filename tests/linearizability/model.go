package main

import (
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/anishathalye/porcupine"
)

// regInput is what an operation asks of the register.
type regInput struct {
	Write bool
	Value string // the value written; unused for reads
}

// opMeta is an operation's Metadata: its block, for the partition
// function, and where it came from, for the visualization.
type opMeta struct {
	Block  int64
	Client int
	Where  string
	Failed bool
}

// RegisterModel is a read/write register per block whose state is the
// id of the value it holds; it starts as the zeros value.  Histories are
// partitioned by block, so one step only ever sees one block's state.
var RegisterModel = porcupine.Model{
	Partition: partitionByBlock,
	Init:      func() interface{} { return ZeroValue },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		in := input.(regInput)
		if in.Write {
			return true, in.Value
		}
		return output.(string) == state.(string), state
	},
	Equal: func(a, b interface{}) bool { return a.(string) == b.(string) },
	Hash: func(state interface{}) uint64 {
		h := fnv.New64a()
		h.Write([]byte(state.(string)))
		return h.Sum64()
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(regInput)
		if in.Write {
			return "w(" + in.Value + ")"
		}
		return "r -> " + output.(string)
	},
	DescribeState: func(state interface{}) string { return state.(string) },
	DescribeOperationMetadata: func(info interface{}) string {
		m, ok := info.(opMeta)
		if !ok {
			return ""
		}
		s := fmt.Sprintf("block %d, client %d, %s", m.Block, m.Client,
			m.Where)
		if m.Failed {
			s += ", failed: may take effect any time after its call"
		}
		return s
	},
}

func partitionByBlock(history []porcupine.Operation) [][]porcupine.Operation {
	idx := map[int64]int{}
	var parts [][]porcupine.Operation

	for _, op := range history {
		b := op.Metadata.(opMeta).Block
		i, ok := idx[b]
		if !ok {
			i = len(parts)
			idx[b] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// toPorcupine converts checked operations.  The visualization draws one
// row per ClientId from 0 up, so client ids are renumbered densely; the
// real id is in the metadata.
func toPorcupine(ops []Op) []porcupine.Operation {
	var ids []int
	seen := map[int]bool{}
	for _, op := range ops {
		if !seen[op.Client] {
			seen[op.Client] = true
			ids = append(ids, op.Client)
		}
	}
	sort.Ints(ids)
	dense := map[int]int{}
	for i, c := range ids {
		dense[c] = i
	}
	out := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		p := porcupine.Operation{
			ClientId: dense[op.Client],
			Call:     op.Call,
			Return:   op.Ret,
			Metadata: opMeta{Block: op.Block, Client: op.Client,
				Where: op.Where, Failed: !op.OK},
		}
		if op.Write {
			p.Input = regInput{Write: true, Value: op.Value}
			p.Output = ""
		} else {
			p.Input = regInput{}
			p.Output = op.Value
		}
		out = append(out, p)
	}
	return out
}
