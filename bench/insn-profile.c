// SPDX-License-Identifier: MIT
/*
 * QEMU TCG plugin: count the guest instructions executed per translation
 * block start address, and write "address count" lines when the guest
 * ends (bench/insn-profile.sh maps the addresses to kernel functions).
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
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
	void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
	void (*cb)(qemu_plugin_id_t id, void *udata), void *udata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
	enum qemu_plugin_op op, void *ptr, uint64_t imm);

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
	for (unsigned long i = 0; i < TABLE_SIZE; i++)
		if (table[i].used && table[i].insns)
			fprintf(f, "%" PRIx64 " %" PRIu64 "\n", table[i].addr,
				table[i].insns);
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
