/* Which programs are JVM launchers (jvm_launcher.h). Syscalls and stack
 * buffers only: the exec hooks call this in vfork children. */
#define _GNU_SOURCE
#include "runtime/jvm_launcher.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LB_LOCAL static __attribute__((no_instrument_function))

/* Limits on what an ELF file may ask of the parser: a JDK launcher has about
 * 13 program headers, 40 dynamic entries and 6 needed libraries. */
#define LB_MAX_PHDRS 64
#define LB_MAX_DYN_ENTRIES 4096
#define LB_MAX_NEEDED 64

/* [offset, offset + len) lies inside a file of `size` bytes. */
LB_LOCAL int lb_in_file(uint64_t offset, uint64_t len, uint64_t size) {
  return offset <= size && len <= size - offset;
}

LB_LOCAL int lb_read_exact(lb_read_at_fn read_at, void* ctx, void* buf, size_t len, uint64_t offset) {
  return read_at(ctx, buf, len, offset) == (long)len;
}

__attribute__((no_instrument_function)) int lb_elf_needs(lb_read_at_fn read_at, void* ctx, uint64_t size,
                                                         const char* library) {
  Elf64_Ehdr eh;
  if (library == NULL || size < sizeof eh || !lb_read_exact(read_at, ctx, &eh, sizeof eh, 0)) return 0;
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
      eh.e_phnum > LB_MAX_PHDRS || !lb_in_file(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), size)) {
    return 0;
  }
  Elf64_Phdr ph[LB_MAX_PHDRS];
  if (!lb_read_exact(read_at, ctx, ph, eh.e_phnum * sizeof(Elf64_Phdr), eh.e_phoff)) return 0;
  const Elf64_Phdr* dynamic = NULL;
  for (int i = 0; i < eh.e_phnum; ++i) {
    if (ph[i].p_type == PT_DYNAMIC) dynamic = &ph[i];
  }
  if (dynamic == NULL || !lb_in_file(dynamic->p_offset, dynamic->p_filesz, size)) return 0;

  /* The dynamic section: where the string table is, and the needed names'
   * offsets in it (read in blocks; it ends at DT_NULL or at its size). */
  uint64_t strtab = 0, strsz = 0, needed[LB_MAX_NEEDED];
  int have_strtab = 0, have_strsz = 0, n_needed = 0;
  const uint64_t entries = dynamic->p_filesz / sizeof(Elf64_Dyn);
  for (uint64_t i = 0, done = 0; i < entries && i < LB_MAX_DYN_ENTRIES && !done;) {
    Elf64_Dyn block[32];
    uint64_t n = entries - i;
    if (n > 32) n = 32;
    if (!lb_read_exact(read_at, ctx, block, n * sizeof(Elf64_Dyn), dynamic->p_offset + i * sizeof(Elf64_Dyn))) {
      return 0;
    }
    for (uint64_t k = 0; k < n; ++k) {
      const Elf64_Dyn* d = &block[k];
      if (d->d_tag == DT_NULL) {
        done = 1;
        break;
      }
      if (d->d_tag == DT_STRTAB) strtab = d->d_un.d_ptr, have_strtab = 1;
      if (d->d_tag == DT_STRSZ) strsz = d->d_un.d_val, have_strsz = 1;
      if (d->d_tag == DT_NEEDED && n_needed < LB_MAX_NEEDED) needed[n_needed++] = d->d_un.d_val;
    }
    i += n;
  }
  if (!have_strtab || !have_strsz || n_needed == 0) return 0;

  /* DT_STRTAB is an address: the loadable segment that holds it gives its
   * place in the file. */
  uint64_t strtab_offset = 0;
  int mapped = 0;
  for (int i = 0; i < eh.e_phnum && !mapped; ++i) {
    if (ph[i].p_type == PT_LOAD && strtab >= ph[i].p_vaddr && strtab - ph[i].p_vaddr < ph[i].p_filesz) {
      strtab_offset = ph[i].p_offset + (strtab - ph[i].p_vaddr);
      mapped = strtab_offset >= ph[i].p_offset;  /* no wrap-around */
    }
  }
  if (!mapped || !lb_in_file(strtab_offset, strsz, size)) return 0;

  const size_t want = strlen(library) + 1; /* the name and its NUL */
  char name[256];
  if (want > sizeof name) return 0;
  for (int i = 0; i < n_needed; ++i) {
    if (needed[i] >= strsz || strsz - needed[i] < want) continue;
    if (!lb_read_exact(read_at, ctx, name, want, strtab_offset + needed[i])) return 0;
    if (memcmp(name, library, want) == 0) return 1;
  }
  return 0;
}

/* `path` as the kernel would run it: a bare name looked up in PATH, then
 * symbolic links followed (at most 16), into `file` (`size` bytes). 0 when
 * it cannot be found. */
LB_LOCAL int lb_resolve(const char* path, char* file, size_t size) {
  if (path == NULL || strlen(path) >= size) return 0;
  if (strchr(path, '/') == NULL) {
    const char* dirs = getenv("PATH");
    int found = 0;
    for (const char* p = dirs; p != NULL && !found;) {
      const char* colon = strchr(p, ':');
      const size_t len = colon != NULL ? (size_t)(colon - p) : strlen(p);
      if (len > 0 && len + 1 + strlen(path) < size) {
        memcpy(file, p, len);
        file[len] = '/';
        strcpy(file + len + 1, path);
        found = access(file, X_OK) == 0;
      }
      p = colon != NULL ? colon + 1 : NULL;
    }
    if (!found) return 0;
  } else {
    strcpy(file, path);
  }
  for (int hop = 0; hop < 16; ++hop) {
    char target[4096];
    const ssize_t n = readlink(file, target, sizeof target - 1);
    if (n <= 0) break; /* not a link */
    target[n] = '\0';
    const char* slash = strrchr(file, '/');
    const size_t keep = target[0] == '/' || slash == NULL ? 0 : (size_t)(slash - file) + 1;
    if (keep + (size_t)n >= size) return 0;
    memcpy(file + keep, target, (size_t)n + 1);
  }
  return 1;
}

LB_LOCAL long lb_pread_fd(void* ctx, void* buf, size_t len, uint64_t offset) {
  const int fd = *(const int*)ctx;
  size_t got = 0;
  while (got < len) {
    const ssize_t n = pread(fd, (char*)buf + got, len - got, (off_t)(offset + got));
    if (n < 0) return -1;
    if (n == 0) break;
    got += (size_t)n;
  }
  return (long)got;
}

/* The two open files have the same bytes. */
LB_LOCAL int lb_same_content(int a, int b) {
  struct stat sa, sb;
  if (fstat(a, &sa) != 0 || fstat(b, &sb) != 0 || sa.st_size != sb.st_size) return 0;
  if (sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino) return 1;
  char ba[1024], bb[1024];
  for (uint64_t off = 0; off < (uint64_t)sa.st_size;) {
    const long na = lb_pread_fd(&a, ba, sizeof ba, off), nb = lb_pread_fd(&b, bb, sizeof bb, off);
    if (na <= 0 || na != nb || memcmp(ba, bb, (size_t)na) != 0) return 0;
    off += (uint64_t)na;
  }
  return 1;
}

__attribute__((no_instrument_function)) enum lb_launcher_kind lb_classify_launcher(const char* path) {
  if (path == NULL) return LB_NOT_A_LAUNCHER;
  const char* slash = strrchr(path, '/');
  if (strcmp(slash != NULL ? slash + 1 : path, "java") == 0) return LB_JAVA_LAUNCHER;
  char file[4096];
  if (!lb_resolve(path, file, sizeof file)) return LB_NOT_A_LAUNCHER;
  slash = strrchr(file, '/');
  if (strcmp(slash != NULL ? slash + 1 : file, "java") == 0) return LB_JAVA_LAUNCHER; /* a link to java */
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return LB_NOT_A_LAUNCHER;
  struct stat st;
  enum lb_launcher_kind kind = LB_NOT_A_LAUNCHER;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      lb_elf_needs(lb_pread_fd, &fd, (uint64_t)st.st_size, "libjli.so")) {
    /* The launcher library's users are `java` and the tools beside it in a
     * JDK's bin/, which differ only in the arguments built into them. Only
     * `java` takes JVM flags as they are and only the tools take -J<flag>
     * (`java -J-X` is an unknown option: the JVM would not start), so a
     * copy of java under another name must not be taken for a tool: a
     * program is a tool when a `java` sits beside it with other bytes, java
     * when it has java's bytes, and neither (left alone) without a `java`
     * to compare with. */
    char sibling[4096];
    const size_t dir = slash != NULL ? (size_t)(slash - file) + 1 : 0;
    if (dir + sizeof "java" <= sizeof sibling) {
      memcpy(sibling, file, dir);
      memcpy(sibling + dir, "java", sizeof "java");
      const int java = open(sibling, O_RDONLY | O_CLOEXEC);
      if (java >= 0) {
        kind = lb_same_content(fd, java) ? LB_JAVA_LAUNCHER : LB_JDK_TOOL;
        close(java);
      }
    }
  }
  close(fd);
  return kind;
}

__attribute__((no_instrument_function)) int lb_jdk_release(const char* path) {
  char file[4096];
  if (!lb_resolve(path, file, sizeof file)) return 0;
  char* slash = strrchr(file, '/'); /* .../bin/java -> .../bin */
  if (slash == NULL) return 0;
  *slash = '\0';
  slash = strrchr(file, '/'); /* .../bin -> .../release */
  if (slash == NULL || (size_t)(slash - file) + sizeof "/release" > sizeof file) return 0;
  strcpy(slash, "/release");
  const int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[4096];
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  const char* v = strstr(text, "JAVA_VERSION=\"");
  if (v == NULL) return 0;
  v += sizeof "JAVA_VERSION=\"" - 1;
  if (v[0] == '1' && v[1] == '.') v += 2;
  int release = 0;
  while (*v >= '0' && *v <= '9' && release < 10000) release = release * 10 + (*v++ - '0');
  return release;
}

/* The value of `name` in `envp` (NULL: this process's environment). */
LB_LOCAL const char* lb_env(char* const envp[], const char* name) {
  if (envp == NULL) return getenv(name);
  const size_t len = strlen(name);
  for (size_t i = 0; envp[i] != NULL; ++i) {
    if (strncmp(envp[i], name, len) == 0 && envp[i][len] == '=') return envp[i] + len + 1;
  }
  return NULL;
}

/* The last PrintWarnings setting among the words of `options`: 1 on, 0 off,
 * `state` when none. */
LB_LOCAL int lb_last_print_warnings(const char* options, int state) {
  static const char kFlag[] = "PrintWarnings";
  for (const char* p = options; p != NULL && (p = strstr(p, kFlag)) != NULL; p += sizeof kFlag - 1) {
    const char* end = p + sizeof kFlag - 1;
    if (*end != '\0' && *end != ' ' && *end != '\t' && *end != '\n') continue;
    if (p - options < 5 || strncmp(p - 5, "-XX:", 4) != 0 || (p[-1] != '+' && p[-1] != '-')) continue;
    if (p - options > 5 && p[-6] != ' ' && p[-6] != '\t' && p[-6] != '\n') continue;
    state = p[-1] == '+';
  }
  return state;
}

__attribute__((no_instrument_function)) size_t lb_critical_natives_flags(enum lb_launcher_kind kind,
                                                                         char* const envp[], const char* out[3]) {
  const int tool = kind == LB_JDK_TOOL;
  int warnings = lb_last_print_warnings(lb_env(envp, "JAVA_TOOL_OPTIONS"), 1);
  if (!tool) warnings = lb_last_print_warnings(lb_env(envp, "JDK_JAVA_OPTIONS"), warnings);
  size_t n = 0;
  out[n++] = tool ? "-J-XX:-PrintWarnings" : "-XX:-PrintWarnings";
  out[n++] = tool ? "-J-XX:+CriticalJNINatives" : "-XX:+CriticalJNINatives";
  if (warnings) out[n++] = tool ? "-J-XX:+PrintWarnings" : "-XX:+PrintWarnings";
  return n;
}
