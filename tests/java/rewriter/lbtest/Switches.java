package lbtest;

final class Switches {
  static int table(int x) {
    switch (x) {
      case 0: return 10;
      case 1: return 11;
      case 2:
      case 3: return 13;
      case 5: return 15;
      default: return -1;
    }
  }
  static int lookup(int x) {
    switch (x) {
      case -1000: return 1;
      case 7: return 2;
      case 123456: return 3;
      default: return 0;
    }
  }
  static String strings(String s) {
    switch (s) {
      case "alpha": return "A";
      case "beta": return "B";
      default: return "?";
    }
  }
  enum Color { RED, GREEN, BLUE }
  static int enums(Color c) {
    return switch (c) {
      case RED -> 1;
      case GREEN -> {
        int g = table(2);
        yield g;
      }
      case BLUE -> lookup(7);
    };
  }
  // Switch at different alignments: the 6-byte entry probe moves its padding.
  static int aligned(long pad, int x) {
    long y = pad + 1;
    switch (x) {
      case 1: y += 2; break;
      case 2: y += 3; break;
      case 3: y += 4; break;
      default: y = 0;
    }
    return (int) y;
  }
  static void run() {
    StringBuilder sb = new StringBuilder("switches:");
    for (int i = -1; i < 7; i++) sb.append(' ').append(table(i));
    for (int i : new int[] {-1000, 7, 123456, 8}) sb.append(' ').append(lookup(i));
    sb.append(' ').append(strings("alpha")).append(strings("beta")).append(strings("x"));
    for (Color c : Color.values()) sb.append(' ').append(enums(c));
    for (int i = 0; i < 5; i++) sb.append(' ').append(aligned(i, i));
    System.out.println(sb);
  }
}
