/* SPDX-License-Identifier: MIT */
/*
 * iSCSI text data segments (RFC 7143 §6.1): accumulation of continued segments, pair
 * iteration with syntax checks, and a bounded response builder that hands out PDU-sized
 * chunks.
 */
#include "transport/iscsi/text/textbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Grow @p *buf to hold at least @p need bytes, never beyond @p limit. */
static int grow(uint8_t **buf, size_t *cap, size_t need, size_t limit)
{
	size_t ncap = *cap ? *cap : 512;

	if (need <= *cap) {
		return 0;
	}
	while (ncap < need) {
		ncap *= 2;
	}
	if (ncap > limit) {
		ncap = limit;
	}
	uint8_t *nb = realloc(*buf, ncap);
	if (nb == NULL) {
		return -ENOMEM;
	}
	*buf = nb;
	*cap = ncap;
	return 0;
}

void scsitgt__iscsi_text_acc_init(struct scsitgt__iscsi_text_acc *acc, size_t limit)
{
	memset(acc, 0, sizeof(*acc));
	acc->limit = limit ? limit : SCSITGT__ISCSI_TEXT_LIMIT_DEFAULT;
}

int scsitgt__iscsi_text_acc_add(struct scsitgt__iscsi_text_acc *acc, const void *data, size_t len,
				bool cont)
{
	int rc;

	if (acc->limit == 0) {
		acc->limit = SCSITGT__ISCSI_TEXT_LIMIT_DEFAULT;
	}
	if (acc->complete) {
		acc->len = 0;
		acc->complete = false;
	}
	/* A continued segment must carry text; an empty one would let a peer loop forever. */
	if (cont && len == 0) {
		acc->len = 0;
		return -EINVAL;
	}
	if (len > acc->limit - acc->len) {
		acc->len = 0;
		return -EMSGSIZE;
	}
	if (len > 0) {
		rc = grow(&acc->buf, &acc->cap, acc->len + len, acc->limit);
		if (rc < 0) {
			acc->len = 0;
			return rc;
		}
		memcpy(acc->buf + acc->len, data, len);
		acc->len += len;
	}
	if (cont) {
		return 0;
	}
	/* RFC 7143 §6.1: every key=value pair, the last included, ends with a NUL. */
	if (acc->len > 0 && acc->buf[acc->len - 1] != '\0') {
		acc->len = 0;
		return -EINVAL;
	}
	acc->complete = true;
	return 1;
}

const uint8_t *scsitgt__iscsi_text_acc_data(const struct scsitgt__iscsi_text_acc *acc, size_t *len)
{
	*len = acc->len;
	return acc->len ? acc->buf : NULL;
}

void scsitgt__iscsi_text_acc_reset(struct scsitgt__iscsi_text_acc *acc)
{
	acc->len = 0;
	acc->complete = false;
}

void scsitgt__iscsi_text_acc_destroy(struct scsitgt__iscsi_text_acc *acc)
{
	free(acc->buf);
	acc->buf = NULL;
	acc->len = 0;
	acc->cap = 0;
	acc->complete = false;
}

static bool is_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool scsitgt__iscsi_key_name_valid(const char *key, size_t len)
{
	if (len == 0 || len > SCSITGT__ISCSI_KEY_NAME_MAX || !is_letter(key[0])) {
		return false;
	}
	for (size_t i = 1; i < len; i++) {
		char c = key[i];

		/* RFC 7143 §6.1 key-name characters; '#' only in the "X#" private prefix. */
		if (is_letter(c) || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' ||
		    c == '@' || c == '_') {
			continue;
		}
		if (c == '#' && i == 1 && key[0] == 'X') {
			continue;
		}
		return false;
	}
	return true;
}

int scsitgt__iscsi_text_next(const uint8_t *text, size_t len, size_t *pos,
			     struct scsitgt__iscsi_kv *kv)
{
	size_t p = *pos;

	if (p >= len) {
		return 0;
	}
	const char *start = (const char *)text + p;
	const char *nul = memchr(start, '\0', len - p);
	if (nul == NULL) {
		return -EINVAL;
	}
	size_t pair_len = (size_t)(nul - start);
	const char *eq = memchr(start, '=', pair_len);
	if (eq == NULL) {
		return -EINVAL;
	}
	size_t key_len = (size_t)(eq - start);
	size_t value_len = pair_len - key_len - 1;
	if (!scsitgt__iscsi_key_name_valid(start, key_len) ||
	    value_len > SCSITGT__ISCSI_LONG_VALUE_MAX) {
		return -EINVAL;
	}
	kv->key = start;
	kv->key_len = key_len;
	kv->value = eq + 1;
	kv->value_len = value_len;
	*pos = p + pair_len + 1;
	return 1;
}

void scsitgt__iscsi_textbuf_init(struct scsitgt__iscsi_textbuf *tb, size_t limit)
{
	memset(tb, 0, sizeof(*tb));
	tb->limit = limit ? limit : SCSITGT__ISCSI_TEXT_LIMIT_DEFAULT;
}

int scsitgt__iscsi_textbuf_add_n(struct scsitgt__iscsi_textbuf *tb, const char *key, size_t key_len,
				 const char *value, size_t value_len)
{
	int rc;

	if (tb->limit == 0) {
		tb->limit = SCSITGT__ISCSI_TEXT_LIMIT_DEFAULT;
	}
	if (key_len == 0) {
		return -EINVAL;
	}
	if (key_len > tb->limit || value_len > tb->limit ||
	    key_len + value_len + 2 > tb->limit - tb->len) {
		return -ENOSPC;
	}
	size_t need = tb->len + key_len + value_len + 2;
	rc = grow(&tb->buf, &tb->cap, need, tb->limit);
	if (rc < 0) {
		return rc;
	}
	uint8_t *p = tb->buf + tb->len;
	memcpy(p, key, key_len);
	p[key_len] = '=';
	if (value_len > 0) {
		memcpy(p + key_len + 1, value, value_len);
	}
	p[key_len + 1 + value_len] = '\0';
	tb->len = need;
	return 0;
}

int scsitgt__iscsi_textbuf_add(struct scsitgt__iscsi_textbuf *tb, const char *key,
			       const char *value)
{
	return scsitgt__iscsi_textbuf_add_n(tb, key, strlen(key), value, strlen(value));
}

int scsitgt__iscsi_textbuf_add_u32(struct scsitgt__iscsi_textbuf *tb, const char *key,
				   uint32_t value)
{
	char num[16];

	snprintf(num, sizeof(num), "%u", (unsigned int)value);
	return scsitgt__iscsi_textbuf_add(tb, key, num);
}

bool scsitgt__iscsi_textbuf_has_key(const struct scsitgt__iscsi_textbuf *tb, const char *key)
{
	size_t klen = strlen(key);
	size_t pos = 0;

	while (pos < tb->len) {
		const uint8_t *start = tb->buf + pos;
		const uint8_t *nul = memchr(start, '\0', tb->len - pos);

		if (nul == NULL) {
			break;
		}
		if ((size_t)(nul - start) > klen && memcmp(start, key, klen) == 0 &&
		    start[klen] == '=') {
			return true;
		}
		pos += (size_t)(nul - start) + 1;
	}
	return false;
}

const uint8_t *scsitgt__iscsi_textbuf_data(const struct scsitgt__iscsi_textbuf *tb, size_t *len)
{
	*len = tb->len;
	return tb->len ? tb->buf : NULL;
}

size_t scsitgt__iscsi_textbuf_next_chunk(struct scsitgt__iscsi_textbuf *tb, const uint8_t **data,
					 size_t max, bool *more)
{
	size_t left = tb->len - tb->taken;
	size_t n = left < max ? left : max;

	*data = n ? tb->buf + tb->taken : NULL;
	tb->taken += n;
	*more = tb->taken < tb->len;
	return n;
}

size_t scsitgt__iscsi_textbuf_remaining(const struct scsitgt__iscsi_textbuf *tb)
{
	return tb->len - tb->taken;
}

void scsitgt__iscsi_textbuf_reset(struct scsitgt__iscsi_textbuf *tb)
{
	tb->len = 0;
	tb->taken = 0;
}

void scsitgt__iscsi_textbuf_destroy(struct scsitgt__iscsi_textbuf *tb)
{
	free(tb->buf);
	tb->buf = NULL;
	tb->len = 0;
	tb->cap = 0;
	tb->taken = 0;
}
