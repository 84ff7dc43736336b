/* tests/unit/test_textreq.c - target/iscsi/textreq.c: SendTargets answers
 * with access control, portal formatting (IPv6 brackets, wildcard listen
 * address replaced by the local address). */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "target/iscsi/iscsi_int.h"
#include "tests/lib/ckmain.h"

static struct conf_portal portals[3];
static unsigned p_t1[] = { 0, 1 }, p_t2[] = { 2 };
static char *allow_t2[] = { "iqn.2000-01.com.example:good" };
static struct conf_target targets[2];
static struct conf cf;

static void setup(void)
{
	memset(portals, 0, sizeof(portals));
	portals[0] = (struct conf_portal){ .name = "a", .listen = "127.0.0.1:3260",
					   .host = "127.0.0.1", .port = 3260,
					   .family = AF_INET, .tpgt = 1 };
	portals[1] = (struct conf_portal){ .name = "b", .listen = "[::1]:3261", .host = "::1",
					   .port = 3261, .family = AF_INET6, .tpgt = 2 };
	portals[2] = (struct conf_portal){ .name = "c", .listen = "0.0.0.0:3262",
					   .host = "0.0.0.0", .port = 3262, .family = AF_INET,
					   .tpgt = 3 };
	memset(targets, 0, sizeof(targets));
	targets[0] = (struct conf_target){ .iqn = "iqn.2026-11.org.rtgt:one", .portals = p_t1,
					   .n_portals = 2, .allow_all = true };
	targets[1] = (struct conf_target){ .iqn = "iqn.2026-11.org.rtgt:two", .portals = p_t2,
					   .n_portals = 1, .allow = allow_t2, .n_allow = 1 };
	memset(&cf, 0, sizeof(cf));
	cf.portals = portals;
	cf.n_portals = 3;
	cf.targets = targets;
	cf.n_targets = 2;
}

/* The answer as one string with '|' for the NULs. */
static void flatten(const struct iscsi_textbuf *b, char *out, size_t len)
{
	size_t i;

	for (i = 0; i < b->len && i + 1 < len; i++)
		out[i] = b->data[i] ? (char)b->data[i] : '|';
	out[i] = '\0';
}

START_TEST(t01_format_portal)
{
	char buf[128];
	struct sockaddr_storage local;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&local;

	setup();
	iscsi_format_portal(&portals[0], NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "127.0.0.1:3260,1");
	iscsi_format_portal(&portals[1], NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "[::1]:3261,2");
	memset(&local, 0, sizeof(local));
	in4->sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.9", &in4->sin_addr);
	iscsi_format_portal(&portals[2], &local, buf, sizeof(buf));
	ck_assert_str_eq(buf, "127.0.0.9:3262,3");
}
END_TEST

START_TEST(t02_acl)
{
	setup();
	ck_assert(iscsi_target_allows(&targets[0], "iqn.1999-01.any:thing", NULL));
	ck_assert(iscsi_target_allows(&targets[1], "iqn.2000-01.com.example:good", NULL));
	ck_assert(iscsi_target_allows(&targets[1], "IQN.2000-01.COM.EXAMPLE:GOOD", NULL));
	ck_assert(!iscsi_target_allows(&targets[1], "iqn.2000-01.com.example:bad", NULL));
	ck_assert(iscsi_target_on_portal(&targets[0], 1));
	ck_assert(!iscsi_target_on_portal(&targets[0], 2));
}
END_TEST

START_TEST(t03_sendtargets)
{
	struct iscsi_textbuf b = { 0 };
	char s[512];

	setup();
	/* an initiator not allowed on "two" sees only "one" */
	ck_assert_int_eq(iscsi_sendtargets(&cf, "iqn.2000-01.com.example:bad", "All", -1, NULL, &b),
			 0);
	flatten(&b, s, sizeof(s));
	ck_assert_str_eq(s, "TargetName=iqn.2026-11.org.rtgt:one|TargetAddress=127.0.0.1:3260,1|"
			    "TargetAddress=[::1]:3261,2|");
	iscsi_text_free(&b);

	memset(&b, 0, sizeof(b));
	ck_assert_int_eq(iscsi_sendtargets(&cf, "iqn.2000-01.com.example:good",
					   "iqn.2026-11.org.rtgt:two", -1, NULL, &b),
			 0);
	flatten(&b, s, sizeof(s));
	/* wildcard without a local address falls back to the configured host */
	ck_assert_str_eq(s, "TargetName=iqn.2026-11.org.rtgt:two|TargetAddress=0.0.0.0:3262,3|");
	iscsi_text_free(&b);

	/* empty value: the session's own target only */
	memset(&b, 0, sizeof(b));
	ck_assert_int_eq(iscsi_sendtargets(&cf, "iqn.2000-01.com.example:good", "", 0, NULL, &b), 0);
	flatten(&b, s, sizeof(s));
	ck_assert(strncmp(s, "TargetName=iqn.2026-11.org.rtgt:one|", 36) == 0);
	ck_assert_ptr_null(strstr(s, ":two"));
	iscsi_text_free(&b);

	/* an unknown name gives an empty answer */
	memset(&b, 0, sizeof(b));
	ck_assert_int_eq(iscsi_sendtargets(&cf, "iqn.2000-01.com.example:good", "iqn.x:none", -1,
					   NULL, &b),
			 0);
	ck_assert_uint_eq(b.len, 0);
	iscsi_text_free(&b);
}
END_TEST

static struct sockaddr_storage addr4(const char *ip)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	in4->sin_family = AF_INET;
	inet_pton(AF_INET, ip, &in4->sin_addr);
	return ss;
}

/* Address rules: a named rule binds its initiator to its networks; an
 * address-only rule lets anyone else in from its networks; plain names
 * stay allowed from anywhere; SendTargets follows the same decision. */
START_TEST(t04_address_rules)
{
	static const char *const a = "iqn.2000-01.com.example:a", *const b =
		"iqn.2000-01.com.example:b";
	static char *allow[] = { "iqn.2000-01.com.example:a", "iqn.2000-01.com.example:good" };
	struct conf_net net_a, net_any;
	struct conf_addr_rule rules[2];
	struct sockaddr_storage lo1 = addr4("127.0.0.1"), lo2 = addr4("127.0.0.2"),
				far = addr4("198.18.0.1");
	struct iscsi_textbuf buf = { 0 };
	const char *why;

	setup();
	ck_assert_int_eq(conf_net_parse("127.0.0.1", &net_a, &why), 0);
	ck_assert_int_eq(conf_net_parse("127.0.0.0/8", &net_any, &why), 0);
	rules[0] = (struct conf_addr_rule){ .initiator = (char *)a, .nets = &net_a, .n_nets = 1 };
	rules[1] = (struct conf_addr_rule){ .nets = &net_any, .n_nets = 1 };
	targets[1].allow = allow;
	targets[1].n_allow = 2;
	targets[1].addr_rules = rules;
	targets[1].n_addr_rules = 2;
	ck_assert(iscsi_target_allows(&targets[1], a, &lo1));
	ck_assert(iscsi_target_allows(&targets[1], "IQN.2000-01.COM.EXAMPLE:A", &lo1));
	ck_assert(!iscsi_target_allows(&targets[1], a, &lo2));   /* its own rule decides */
	ck_assert(!iscsi_target_allows(&targets[1], a, NULL));
	ck_assert(iscsi_target_allows(&targets[1], b, &lo2));    /* address-only rule */
	ck_assert(!iscsi_target_allows(&targets[1], b, &far));
	ck_assert(iscsi_target_allows(&targets[1], "iqn.2000-01.com.example:good", &far));
	/* with "ALL" the named rule still binds a */
	targets[1].allow_all = true;
	targets[1].n_addr_rules = 1;
	ck_assert(!iscsi_target_allows(&targets[1], a, &lo2));
	ck_assert(iscsi_target_allows(&targets[1], b, &far));
	targets[1].allow_all = false;
	targets[1].n_addr_rules = 2;
	/* SendTargets through portal c hides target two from a at 127.0.0.2 */
	ck_assert_int_eq(iscsi_sendtargets_portal(&cf, a, "All", -1, 2, &lo2, &lo2, &buf), 0);
	ck_assert_uint_eq(buf.len, 0);
	ck_assert_int_eq(iscsi_sendtargets_portal(&cf, a, "All", -1, 2, &lo1, &lo1, &buf), 0);
	ck_assert_ptr_nonnull(memmem(buf.data, buf.len, "TargetName=iqn.2026-11.org.rtgt:two", 35));
	free(buf.data);
}
END_TEST

int main(void)
{
	const struct ck_case cases[] = {
		CK_CASE("01_format_portal", t01_format_portal),
		CK_CASE("02_acl", t02_acl),
		CK_CASE("03_sendtargets", t03_sendtargets),
		CK_CASE("04_address_rules", t04_address_rules),
	};

	return ck_main(&(struct ck_suite_def){ "textreq", CK_CASES(cases) });
}
