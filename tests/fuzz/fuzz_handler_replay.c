/*
 * fuzz_handler as it was before it sampled (see there): the replay
 * check after every input that sets flag 0x08, half of them (by a hash
 * of their bytes) from the whole log as a crash leaves it, the other
 * half from the index checkpoint of a close; and blocks of every volume
 * as sent, up to the top of a volume's page table.  Slower per input,
 * and slower still as its corpus gathers inputs that write near the
 * top of volumes; its seeds are fuzz_handler's.
 */
#define SAMPLE_EVERY	1u
#define RAW_BLOCKS	1
#include "fuzz_handler.c"
