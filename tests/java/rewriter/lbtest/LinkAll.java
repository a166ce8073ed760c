package lbtest;

import java.net.*;
import java.nio.file.*;
import java.util.*;

// Loads and links (so -Xverify:all verifies) every class named in a file.
// Usage: LinkAll <class-list> boot            (boot class loader: patched java.base)
//        LinkAll <class-list> <dir-or-jar>... (a fresh loader over those)
// Class.forName(name, false, ...) loads without initializing; getDeclaredMethods()
// links the class, which runs the verifier.
public final class LinkAll {
  public static void main(String[] args) throws Exception {
    List<String> names = Files.readAllLines(Paths.get(args[0]));
    ClassLoader loader = null;
    if (!args[1].equals("boot")) {
      URL[] urls = new URL[args.length - 1];
      for (int i = 1; i < args.length; i++) urls[i - 1] = Paths.get(args[i]).toUri().toURL();
      loader = new URLClassLoader(urls, ClassLoader.getPlatformClassLoader());
    }
    int linked = 0, verifyErrors = 0, otherErrors = 0;
    for (String name : names) {
      try {
        Class<?> c = Class.forName(name, false, loader);
        c.getDeclaredMethods();
        linked++;
      } catch (VerifyError e) {
        verifyErrors++;
        System.out.println("VERIFY " + name + ": " + e.getMessage());
      } catch (Throwable e) {
        otherErrors++;
        System.out.println("OTHER " + name + ": " + e);
      }
    }
    String probes = "";
    if (loader == null) {
      probes = " " + Class.forName("java.lang.LookbackProbe").getMethod("counts").invoke(null);
    }
    System.out.println("linked " + linked + " verify-errors " + verifyErrors + " other-errors " + otherErrors + probes);
  }
}
