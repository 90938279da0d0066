// Client-side routes under /console (the gateway answers index.html for every one of them):
// /console and /console/ (topics), /console/topics/{topic}, /console/settings. Links are real
// <a href> elements (keyboard, middle click, copy link); a plain click moves with pushState.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

export const BASE = "/console";

export type Route =
  | { readonly page: "topics" }
  | { readonly page: "topic"; readonly topic: string }
  | { readonly page: "settings" }
  | { readonly page: "not-found"; readonly path: string };

export function parseRoute(pathname: string): Route {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  if (rest === "" || rest === "/" || rest === "/topics" || rest === "/topics/") {
    return { page: "topics" };
  }
  if (rest === "/settings" || rest === "/settings/") return { page: "settings" };
  const m = /^\/topics\/([^/]+)\/?$/.exec(rest);
  if (m) {
    try {
      return { page: "topic", topic: decodeURIComponent(m[1]!) };
    } catch {
      // a malformed escape: not a page
    }
  }
  return { page: "not-found", path: pathname };
}

export function hrefOf(route: Route): string {
  switch (route.page) {
    case "topics":
      return `${BASE}/`;
    case "topic":
      return `${BASE}/topics/${encodeURIComponent(route.topic)}`;
    case "settings":
      return `${BASE}/settings`;
    case "not-found":
      return route.path;
  }
}

const CHANGE = "vqs-console-navigate";

export function navigate(href: string): void {
  if (href === location.pathname) return;
  history.pushState(null, "", href);
  window.dispatchEvent(new Event(CHANGE));
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.pathname));
    window.addEventListener("popstate", update);
    window.addEventListener(CHANGE, update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener(CHANGE, update);
    };
  }, []);
  return route;
}

interface LinkProps {
  readonly to: Route;
  readonly children: ComponentChildren;
  readonly class?: string;
  readonly "aria-current"?: "page";
}

export function Link({ to, children, ...rest }: LinkProps) {
  const href = hrefOf(to);
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) {
      return;
    }
    e.preventDefault();
    navigate(href);
  };
  return (
    <a {...rest} href={href} onClick={onClick}>
      {children}
    </a>
  );
}
