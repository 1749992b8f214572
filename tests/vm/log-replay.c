/*
 * log-replay - rebuild what a device held on its medium at a mark of a dm-log-writes log
 * (vm/powerloss, tests/vm/guest/powerloss.sh).
 *
 *   log-replay LOG IMAGE MARK
 *
 * LOG is the log device's content (the regular file behind its loop device, read once the
 * dm device is removed), IMAGE the file to write: it must hold what the logged device held
 * when logging began (zeros for a device made from a new sparse file). Every write entry
 * before the mark entry named MARK is written to IMAGE in the log's order; discards are
 * ignored (the test's file system never discards). Exit 0 with a summary on stdout; 1 when
 * the log is unreadable, or has no mark MARK among its recorded entries.
 *
 * dm-log-writes (Linux Documentation/admin-guide/device-mapper/log-writes.rst) logs a plain
 * write only when a FLUSH that completed after it completes, a FUA write when it completes:
 * the log up to a mark is what a device with a volatile write cache is sure to hold if the
 * power goes at the mark. Layout (little endian): the super block in the log's first sector
 * (magic, version, number of entries, sector size), then per entry one sector with its header
 * (sector, number of sectors, flags, data length; a mark's name after it), followed by the
 * write's data (number of sectors x sector size) unless it is a discard.
 */
#define _FILE_OFFSET_BITS 64
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_MAGIC 0x6a736677736872ULL
#define LOG_VERSION 1
#define LOG_FLUSH (1u << 0)
#define LOG_FUA (1u << 1)
#define LOG_DISCARD (1u << 2)
#define LOG_MARK (1u << 3)

struct counts {
	unsigned long long entries, writes, flushes, fua, discards, bytes;
};

/* pread (@out NULL) or pwrite (@in NULL) all of @len bytes at @off; 0 or -1. */
static int xfer(int fd, void *out, const void *in, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out != NULL ?
				    pread(fd, (char *)out + done, len - done, (off_t)(off + done)) :
				    pwrite(fd, (const char *)in + done, len - done,
					   (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	return xfer(fd, buf, NULL, len, off);
}

static int write_at(int fd, const void *buf, size_t len, uint64_t off)
{
	return xfer(fd, NULL, buf, len, off);
}

static uint64_t le64_at(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* Replays the entries before the mark @mark; 0 when it was found. */
static int replay(int log, int img, const char *mark, struct counts *c)
{
	unsigned char sec[4096];
	uint64_t nr, ssize, off, i;
	uint32_t ss32;
	char *data = NULL;
	size_t cap = 0;

	if (read_at(log, sec, 32, 0) != 0 || le64_at(sec) != LOG_MAGIC ||
	    le64_at(sec + 8) != LOG_VERSION) {
		fprintf(stderr, "log-replay: no dm-log-writes super block\n");
		return -1;
	}
	nr = le64_at(sec + 16);
	memcpy(&ss32, sec + 24, sizeof(ss32));
	ssize = le32toh(ss32);
	if (ssize < 512 || ssize > sizeof(sec) || (ssize & (ssize - 1)) != 0) {
		fprintf(stderr, "log-replay: sector size %llu\n", (unsigned long long)ssize);
		return -1;
	}
	off = ssize;
	for (i = 0; i < nr; i++) {
		uint64_t sector, nsec, flags, dlen, len;

		if (read_at(log, sec, ssize, off) != 0) {
			fprintf(stderr, "log-replay: entry %llu unreadable\n",
				(unsigned long long)i);
			break;
		}
		off += ssize;
		sector = le64_at(sec);
		nsec = le64_at(sec + 8);
		flags = le64_at(sec + 16);
		dlen = le64_at(sec + 24);
		c->entries++;
		if (flags & LOG_MARK) {
			size_t n = dlen < ssize - 32 ? (size_t)dlen : (size_t)ssize - 33;

			if (strlen(mark) == n && memcmp(sec + 32, mark, n) == 0) {
				free(data);
				return 0;
			}
			continue;
		}
		if (flags & LOG_FLUSH)
			c->flushes++;
		if (flags & LOG_FUA)
			c->fua++;
		if (flags & LOG_DISCARD) {
			c->discards++;
			continue;
		}
		if (nsec == 0)
			continue;
		len = nsec * ssize;
		if (len > cap) {
			char *p = realloc(data, (size_t)len);

			if (p == NULL) {
				fprintf(stderr, "log-replay: out of memory\n");
				break;
			}
			data = p;
			cap = (size_t)len;
		}
		if (read_at(log, data, (size_t)len, off) != 0 ||
		    write_at(img, data, (size_t)len, sector * ssize) != 0) {
			fprintf(stderr, "log-replay: entry %llu: %s\n", (unsigned long long)i,
				strerror(errno));
			break;
		}
		off += len;
		c->writes++;
		c->bytes += len;
	}
	free(data);
	fprintf(stderr, "log-replay: no mark '%s' in the %llu entries logged\n", mark,
		(unsigned long long)nr);
	return -1;
}

int main(int argc, char **argv)
{
	struct counts c = { 0 };
	int log, img, rc;

	if (argc != 4) {
		fprintf(stderr, "usage: log-replay LOG IMAGE MARK\n");
		return 2;
	}
	log = open(argv[1], O_RDONLY);
	img = open(argv[2], O_WRONLY);
	if (log < 0 || img < 0) {
		fprintf(stderr, "log-replay: %s: %s\n", log < 0 ? argv[1] : argv[2],
			strerror(errno));
		return 1;
	}
	rc = replay(log, img, argv[3], &c);
	if (fsync(img) != 0)
		rc = -1;
	close(img);
	close(log);
	printf("log-replay: to mark '%s': %llu entries, %llu writes (%llu KiB), %llu flushes, "
	       "%llu FUA, %llu discards ignored\n",
	       argv[3], c.entries, c.writes, c.bytes / 1024, c.flushes, c.fua, c.discards);
	return rc == 0 ? 0 : 1;
}
