// SPDX-License-Identifier: MIT
/*
 * QEMU TCG plugin: count the guest instructions executed per translation
 * block start address, and write "address count" lines when the guest
 * ends (bench/insn-profile.py maps the addresses to kernel functions).
 *
 * A window: the guest marks its start and its end by executing
 * "xchg %bx,%bx" (66 87 db, a no-op; bench/uring-overwrite does it around
 * its measured run when $URING_BENCH_MARK is set). With two marks the
 * counts written are those executed between them, and the first line says
 * "# window"; otherwise they are those of the whole run ("# whole run").
 *
 * Build: cc -O2 -shared -fPIC -o insn-profile.so insn-profile.c
 * Use:   qemu-system-x86_64 -accel tcg,thread=single \
 *            -plugin ./insn-profile.so,out=FILE ...
 *
 * Exact only with single-threaded TCG (vm/run --icount): the counters are
 * plain adds inlined into the translated code, not atomic.
 *
 * QEMU installs no plugin header in Debian 12, so the part of the plugin
 * interface (version 1, QEMU 4.2 to 8.x) used here is declared below; the
 * types are opaque and the functions have kept these signatures through
 * those releases.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
	void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
	void (*cb)(qemu_plugin_id_t id, void *udata), void *udata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
	enum qemu_plugin_op op, void *ptr, uint64_t imm);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
	size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
	void (*cb)(unsigned int vcpu_index, void *udata),
	enum qemu_plugin_cb_flags flags, void *udata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/*
 * One slot per block start address, open addressing. Slots are never
 * freed or moved: translated code keeps a pointer to its counter.
 */
#define TABLE_BITS	20
#define TABLE_SIZE	(1u << TABLE_BITS)

struct slot {
	uint64_t addr;
	uint64_t insns;
	int used;
};

static struct slot *table;
static unsigned long nr_used;
static char *out_path;
/* The counts at the window's start and end marks. */
static uint64_t *mark_start, *mark_end;
static unsigned int nr_marks;

static void mark(unsigned int vcpu_index, void *udata)
{
	uint64_t *snap;

	(void)vcpu_index;
	(void)udata;
	if (nr_marks >= 2) {
		nr_marks++;
		return;
	}
	snap = malloc(TABLE_SIZE * sizeof(*snap));
	if (!snap) {
		fprintf(stderr, "insn-profile: no memory for a mark\n");
		abort();
	}
	for (unsigned long i = 0; i < TABLE_SIZE; i++)
		snap[i] = table[i].insns;
	if (nr_marks++ == 0)
		mark_start = snap;
	else
		mark_end = snap;
}

static int is_mark(struct qemu_plugin_insn *insn)
{
	static const unsigned char xchg_bx_bx[] = { 0x66, 0x87, 0xdb };

	return qemu_plugin_insn_size(insn) == sizeof(xchg_bx_bx) &&
	       !memcmp(qemu_plugin_insn_data(insn), xchg_bx_bx,
		       sizeof(xchg_bx_bx));
}

static struct slot *slot_of(uint64_t addr)
{
	uint64_t h = (addr * 0x9e3779b97f4a7c15ull) >> (64 - TABLE_BITS);

	for (unsigned long n = 0; n < TABLE_SIZE; n++) {
		struct slot *s = &table[(h + n) & (TABLE_SIZE - 1)];

		if (!s->used) {
			s->used = 1;
			s->addr = addr;
			nr_used++;
			return s;
		}
		if (s->addr == addr)
			return s;
	}
	return NULL;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct slot *s = slot_of(qemu_plugin_tb_vaddr(tb));

	(void)id;
	if (!s) {
		fprintf(stderr, "insn-profile: table full (%lu blocks)\n",
			nr_used);
		abort();
	}
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &s->insns,
						 qemu_plugin_tb_n_insns(tb));
	for (size_t i = 0; i < qemu_plugin_tb_n_insns(tb); i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

		if (is_mark(insn))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark,
				QEMU_PLUGIN_CB_NO_REGS, NULL);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	FILE *f = fopen(out_path, "w");

	(void)id;
	(void)udata;
	if (!f) {
		perror(out_path);
		return;
	}
	if (nr_marks == 2)
		fprintf(f, "# window\n");
	else
		fprintf(f, "# whole run (%u marks)\n", nr_marks);
	for (unsigned long i = 0; i < TABLE_SIZE; i++) {
		uint64_t n = table[i].insns;

		if (nr_marks == 2)
			n = mark_end[i] - mark_start[i];
		if (table[i].used && n)
			fprintf(f, "%" PRIx64 " %" PRIu64 "\n", table[i].addr, n);
	}
	if (fclose(f))
		perror(out_path);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
			int argc, char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out_path = strdup(argv[i] + 4);
	if (!out_path) {
		fprintf(stderr, "insn-profile: usage: -plugin insn-profile.so,out=FILE\n");
		return -1;
	}
	table = calloc(TABLE_SIZE, sizeof(*table));
	if (!table)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
