/*
 * The broker's image as built: linked as -Dbroker_link says, its stack not
 * executable, no segment both writable and executable, RELRO, and for a
 * static link the GOT entirely inside it (-z now); the stack protector and
 * _FORTIFY_SOURCE's checked functions in it.  A static binary has no
 * dynamic linker to refuse an executable stack or to apply RELRO: these
 * are read from its own headers.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <check.h>
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildconf.h"

#define BROKER_PATH	RTSANDBOX_BUILDDIR "/broker/rtsandbox-broker"

struct image {
	const uint8_t		*im_base;
	size_t			 im_len;
	const Elf64_Ehdr	*im_eh;
};

static struct image	img;

static void
image_open(void)
{
	struct stat	 st;
	void		*p;
	int		 fd;

	fd = open(BROKER_PATH, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd != -1, "%s: not built", BROKER_PATH);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_ge((size_t)st.st_size, sizeof(Elf64_Ehdr));
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	ck_assert(p != MAP_FAILED);
	close(fd);
	img.im_base = p;
	img.im_len = (size_t)st.st_size;
	img.im_eh = p;
	ck_assert(memcmp(img.im_eh->e_ident, ELFMAG, SELFMAG) == 0);
	ck_assert_int_eq(img.im_eh->e_ident[EI_CLASS], ELFCLASS64);
	ck_assert_uint_le(img.im_eh->e_phoff + (size_t)img.im_eh->e_phnum *
	    sizeof(Elf64_Phdr), img.im_len);
	ck_assert_uint_le(img.im_eh->e_shoff + (size_t)img.im_eh->e_shnum *
	    sizeof(Elf64_Shdr), img.im_len);
}

static const Elf64_Phdr *
image_phdr(int i)
{
	return (const Elf64_Phdr *)(img.im_base + img.im_eh->e_phoff) + i;
}

/* The first program header of this type, or NULL. */
static const Elf64_Phdr *
image_segment(uint32_t type)
{
	int	 i;

	for (i = 0; i < img.im_eh->e_phnum; i++)
		if (image_phdr(i)->p_type == type)
			return image_phdr(i);
	return NULL;
}

static const Elf64_Shdr *
image_shdr(int i)
{
	return (const Elf64_Shdr *)(img.im_base + img.im_eh->e_shoff) + i;
}

static const Elf64_Shdr *
image_section(const char *name)
{
	const Elf64_Shdr	*strs;
	int			 i;

	ck_assert_uint_lt(img.im_eh->e_shstrndx, img.im_eh->e_shnum);
	strs = image_shdr(img.im_eh->e_shstrndx);
	for (i = 0; i < img.im_eh->e_shnum; i++)
		if (image_shdr(i)->sh_name < strs->sh_size &&
		    strcmp((const char *)img.im_base + strs->sh_offset +
		    image_shdr(i)->sh_name, name) == 0)
			return image_shdr(i);
	return NULL;
}

/* Calls fn with the name of every symbol of .symtab and .dynsym. */
static void
image_symbols(void (*fn)(const char *, void *), void *arg)
{
	const Elf64_Shdr	*sh, *str;
	const Elf64_Sym		*sym;
	size_t			 j;
	int			 i;

	for (i = 0; i < img.im_eh->e_shnum; i++) {
		sh = image_shdr(i);
		if ((sh->sh_type != SHT_SYMTAB && sh->sh_type != SHT_DYNSYM) ||
		    sh->sh_link >= img.im_eh->e_shnum)
			continue;
		str = image_shdr((int)sh->sh_link);
		ck_assert_uint_le(sh->sh_offset + sh->sh_size, img.im_len);
		ck_assert_uint_le(str->sh_offset + str->sh_size, img.im_len);
		sym = (const Elf64_Sym *)(img.im_base + sh->sh_offset);
		for (j = 0; j < sh->sh_size / sizeof(*sym); j++)
			if (sym[j].st_name > 0 && sym[j].st_name < str->sh_size)
				fn((const char *)img.im_base + str->sh_offset +
				    sym[j].st_name, arg);
	}
}

START_TEST(linked_as_configured)
{
	const char	*link = RTSANDBOX_BROKER_LINK;

	image_open();
	if (strcmp(link, "static") == 0) {
		ck_assert_int_eq(img.im_eh->e_type, ET_EXEC);
		ck_assert_ptr_null(image_segment(PT_INTERP));
		ck_assert_ptr_null(image_segment(PT_DYNAMIC));
	} else if (strcmp(link, "static-pie") == 0) {
		ck_assert_int_eq(img.im_eh->e_type, ET_DYN);
		ck_assert_ptr_null(image_segment(PT_INTERP));
	} else {
		ck_assert_str_eq(link, "dynamic");
		ck_assert_ptr_nonnull(image_segment(PT_INTERP));
	}
}
END_TEST

START_TEST(stack_not_executable)
{
	const Elf64_Phdr	*ph;
	int			 i;

	image_open();
	/* Without the header the kernel would make the stack executable. */
	ph = image_segment(PT_GNU_STACK);
	ck_assert_ptr_nonnull(ph);
	ck_assert_uint_eq(ph->p_flags & PF_X, 0);
	for (i = 0; i < img.im_eh->e_phnum; i++) {
		ph = image_phdr(i);
		if (ph->p_type == PT_LOAD)
			ck_assert_msg((ph->p_flags & (PF_W | PF_X)) !=
			    (PF_W | PF_X), "segment %d writable and executable",
			    i);
	}
}
END_TEST

START_TEST(relro)
{
	static const char *const	 gots[] = { ".got", ".got.plt" };
	const Elf64_Phdr		*rr;
	const Elf64_Shdr		*sh;
	size_t				 i;

	image_open();
	rr = image_segment(PT_GNU_RELRO);
	ck_assert_ptr_nonnull(rr);
	ck_assert_uint_gt(rr->p_memsz, 0);
	if (strcmp(RTSANDBOX_BROKER_LINK, "dynamic") == 0)
		return;		/* the dynamic linker's business, and the build's */
	/* Static: what glibc writes into the GOT at start (its IFUNCs)
	 * becomes read-only with the rest. */
	for (i = 0; i < sizeof(gots) / sizeof(gots[0]); i++) {
		if ((sh = image_section(gots[i])) == NULL || sh->sh_size == 0)
			continue;
		ck_assert_msg(sh->sh_addr >= rr->p_vaddr && sh->sh_addr +
		    sh->sh_size <= rr->p_vaddr + rr->p_memsz,
		    "%s [%#lx, %#lx) outside RELRO [%#lx, %#lx)", gots[i],
		    (unsigned long)sh->sh_addr,
		    (unsigned long)(sh->sh_addr + sh->sh_size),
		    (unsigned long)rr->p_vaddr,
		    (unsigned long)(rr->p_vaddr + rr->p_memsz));
	}
}
END_TEST

struct found {
	int	 fo_stack_chk;
	int	 fo_fortified;
};

static void
find_hardening(const char *name, void *arg)
{
	struct found	*fo = arg;
	size_t		 n = strlen(name);

	if (strcmp(name, "__stack_chk_fail") == 0)
		fo->fo_stack_chk = 1;
	else if (strncmp(name, "__", 2) == 0 && n > 6 &&
	    strcmp(name + n - 4, "_chk") == 0 &&
	    strncmp(name, "__stack_chk", 11) != 0)
		fo->fo_fortified = 1;
}

START_TEST(protector_and_fortify)
{
	struct found	 fo = { 0, 0 };

	image_open();
	image_symbols(find_hardening, &fo);
	ck_assert_msg(fo.fo_stack_chk, "no __stack_chk_fail");
#if defined(_FORTIFY_SOURCE) && _FORTIFY_SOURCE > 0
	ck_assert_msg(fo.fo_fortified, "no checked (__*_chk) function");
#endif
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("image");
	TCase	*tc = tcase_create("broker");
	SRunner	*sr;
	int	 failed;

	tcase_add_test(tc, linked_as_configured);
	tcase_add_test(tc, stack_not_executable);
	tcase_add_test(tc, relro);
	tcase_add_test(tc, protector_and_fortify);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
