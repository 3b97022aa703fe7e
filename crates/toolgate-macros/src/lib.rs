//! `#[tool]`: a toolgate tool from a function.
//!
//! Use it through `toolgate_runtime::tool`; the runtime's documentation has the details.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, ExprArray, ExprLit, FnArg, Ident, ItemFn, Lit, LitStr, Meta, Pat, ReturnType,
    Token, Type,
};

/// Turns a function into a toolgate tool.
///
/// The function stays as written; beside it comes a unit struct named after it in
/// `PascalCase` (`read_file` → `ReadFile`) that implements `toolgate_runtime::Tool`:
///
/// - the name is the function's (or `name = "…"`);
/// - the description is the doc comment (or `description = "…"`); one of them is required;
/// - the argument schema comes from the parameters (each type must implement
///   `serde::Deserialize` and `schemars::JsonSchema`); a parameter's doc comment, or
///   `#[arg(description = "…")]`, describes it; `Option<T>` parameters are optional;
/// - a parameter of type `ToolContext` receives the call's context and is not an argument;
/// - `tags = ["read_only", …]` are the tags the policy matches; `requires_permission` makes a
///   human approve every call where the policy would allow it;
/// - the function may be `async` or not, and return any `serde::Serialize` value or a
///   `Result<T, E>` whose error is `Display` (the error's text is what the model reads).
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let options = match syn::parse::<Options>(attr) {
        Ok(options) => options,
        Err(e) => return e.to_compile_error().into(),
    };
    let function = match syn::parse::<ItemFn>(item) {
        Ok(function) => function,
        Err(e) => return e.to_compile_error().into(),
    };
    match expand(options, function) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
    tags: Vec<LitStr>,
    requires_permission: bool,
}

const KEYS: &[&str] = &["name", "description", "tags", "requires_permission"];

fn closest(key: &str) -> Option<&'static str> {
    KEYS.iter()
        .copied()
        .find(|k| k.starts_with(key) || key.starts_with(k) || edit_distance(k, key) <= 2)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row.first().copied().unwrap_or(0);
        if let Some(first) = row.first_mut() {
            *first = i + 1;
        }
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row.get(j + 1).copied().unwrap_or(0);
            let deletion = previous + 1;
            let insertion = row.get(j).copied().unwrap_or(0) + 1;
            if let Some(cell) = row.get_mut(j + 1) {
                *cell = substitution.min(deletion).min(insertion);
            }
        }
    }
    row.last().copied().unwrap_or(0)
}

fn string(expr: &Expr, what: &str) -> syn::Result<LitStr> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.clone()),
        other => Err(syn::Error::new_spanned(
            other,
            format!("`{what}` takes a string literal"),
        )),
    }
}

impl Parse for Options {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut options = Options::default();
        let metas = Punctuated::<Meta, Token![,]>::parse_terminated(input)?;
        for meta in metas {
            let key = meta
                .path()
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match (key.as_str(), &meta) {
                ("name", Meta::NameValue(nv)) => options.name = Some(string(&nv.value, "name")?),
                ("description", Meta::NameValue(nv)) => {
                    options.description = Some(string(&nv.value, "description")?);
                }
                ("tags", Meta::NameValue(nv)) => {
                    let Expr::Array(ExprArray { elems, .. }) = &nv.value else {
                        return Err(syn::Error::new_spanned(
                            &nv.value,
                            "`tags` takes a list of strings: `tags = [\"read_only\"]`",
                        ));
                    };
                    for tag in elems {
                        let tag = string(tag, "tags")?;
                        if tag.value().trim().is_empty() {
                            return Err(syn::Error::new_spanned(tag, "a tag cannot be empty"));
                        }
                        options.tags.push(tag);
                    }
                }
                ("requires_permission", Meta::Path(_)) => options.requires_permission = true,
                ("name" | "description" | "tags", _) => {
                    return Err(syn::Error::new_spanned(&meta, format!("write `{key} = …`")));
                }
                ("requires_permission", _) => {
                    return Err(syn::Error::new_spanned(
                        &meta,
                        "`requires_permission` takes no value: write `requires_permission`",
                    ));
                }
                _ => {
                    let hint = closest(&key)
                        .map(|k| format!("; did you mean `{k}`?"))
                        .unwrap_or_else(|| format!("; expected one of: {}", KEYS.join(", ")));
                    return Err(syn::Error::new_spanned(
                        meta.path(),
                        format!("unknown `#[tool]` option `{key}`{hint}"),
                    ));
                }
            }
        }
        Ok(options)
    }
}

/// The text of a list of doc attributes, one line each, trimmed.
fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn pascal_case(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) => p.path.segments.last(),
        Type::Reference(r) => last_segment(&r.elem),
        _ => None,
    }
}

struct Param {
    ident: Ident,
    ty: Type,
    description: Option<String>,
}

fn expand(options: Options, mut function: ItemFn) -> syn::Result<TokenStream2> {
    let sig = &function.sig;
    if let Some(generic) = sig.generics.params.first() {
        return Err(syn::Error::new_spanned(
            generic,
            "a #[tool] function cannot be generic: the model calls it with JSON arguments",
        ));
    }
    if let Some(constness) = &sig.constness {
        return Err(syn::Error::new_spanned(
            constness,
            "a #[tool] function cannot be `const`",
        ));
    }
    let fn_name = sig.ident.clone();
    let tool_name = options
        .name
        .as_ref()
        .map_or_else(|| fn_name.to_string(), LitStr::value);
    let description = match (&options.description, doc_text(&function.attrs)) {
        (Some(d), _) => d.value(),
        (None, Some(doc)) => doc,
        (None, None) => {
            return Err(syn::Error::new_spanned(
                &sig.ident,
                "a #[tool] needs a description for the model: add a doc comment (`/// …`) \
                 or `#[tool(description = \"…\")]`",
            ));
        }
    };

    let mut params = Vec::new();
    let mut call_args = Vec::new();
    for input in function.sig.inputs.iter_mut() {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                return Err(syn::Error::new_spanned(
                    receiver,
                    "#[tool] works on free functions: `self` is not allowed",
                ));
            }
            FnArg::Typed(typed) => typed,
        };
        let ident = match &*typed.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "each #[tool] parameter needs a plain name: it is the argument's name in JSON",
                ));
            }
        };
        let mut description = doc_text(&typed.attrs);
        let mut kept = Vec::new();
        for attr in typed.attrs.drain(..) {
            if attr.path().is_ident("doc") {
                continue;
            }
            if attr.path().is_ident("arg") {
                attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("description") {
                        description = Some(meta.value()?.parse::<LitStr>()?.value());
                        Ok(())
                    } else {
                        Err(meta.error("`#[arg]` takes `description = \"…\"`"))
                    }
                })?;
                continue;
            }
            kept.push(attr);
        }
        typed.attrs = kept;
        let is_context = last_segment(&typed.ty).is_some_and(|s| s.ident == "ToolContext");
        if is_context {
            call_args.push(quote!(__context.clone()));
            continue;
        }
        if let Type::Reference(r) = &*typed.ty {
            return Err(syn::Error::new_spanned(
                r,
                "#[tool] parameters are owned values decoded from JSON: use `String`, not `&str`",
            ));
        }
        call_args.push(quote!(__args.#ident));
        params.push(Param {
            ident,
            ty: (*typed.ty).clone(),
            description,
        });
    }

    let vis = &function.vis;
    let struct_name = format_ident!(
        "{}",
        pascal_case(&fn_name.to_string()),
        span = fn_name.span()
    );
    let args_name = format_ident!("__{}Arguments", struct_name);
    let fields = params.iter().map(|p| {
        let (ident, ty) = (&p.ident, &p.ty);
        let doc = p.description.as_ref().map(|d| quote!(#[doc = #d]));
        quote_spanned!(ty.span()=> #doc #ident: #ty)
    });
    let tags = options.tags.iter();
    let requires = options
        .requires_permission
        .then(|| quote!(.requiring_permission()));
    let awaited = function.sig.asyncness.is_some().then(|| quote!(.await));
    let returns_result = match &function.sig.output {
        ReturnType::Type(_, ty) => last_segment(ty).is_some_and(|s| s.ident == "Result"),
        ReturnType::Default => false,
    };
    let value = if returns_result {
        quote! {
            match __output {
                ::core::result::Result::Ok(value) => value,
                ::core::result::Result::Err(error) => {
                    return ::core::result::Result::Err(
                        ::toolgate_runtime::ToolError::new(error.to_string()),
                    );
                }
            }
        }
    } else {
        quote!(__output)
    };
    let doc = format!("The tool `{tool_name}` (generated by `#[tool]` from [`{fn_name}`]).");
    let private = quote!(::toolgate_runtime::__private);
    let unused_args = params.is_empty().then(|| quote!(let _ = &__args;));

    Ok(quote! {
        #function

        #[doc = #doc]
        #[derive(Clone, Copy, Debug, Default)]
        #vis struct #struct_name;

        #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
        #[serde(crate = "::toolgate_runtime::__private::serde")]
        #[schemars(crate = "::toolgate_runtime::__private::schemars")]
        #[allow(non_camel_case_types)]
        struct #args_name {
            #(#fields,)*
        }

        #[#private::async_trait]
        impl ::toolgate_runtime::Tool for #struct_name {
            fn info(&self) -> &::toolgate_runtime::ToolInfo {
                static INFO: ::std::sync::OnceLock<::toolgate_runtime::ToolInfo> =
                    ::std::sync::OnceLock::new();
                INFO.get_or_init(|| {
                    let mut parameters = #private::serde_json::to_value(
                        #private::schemars::schema_for!(#args_name),
                    )
                    .unwrap_or_default();
                    if let ::core::option::Option::Some(object) = parameters.as_object_mut() {
                        object.remove("$schema");
                        object.remove("title");
                        object
                            .entry("properties")
                            .or_insert_with(|| #private::serde_json::json!({}));
                    }
                    ::toolgate_runtime::ToolInfo::new(#tool_name, #description)
                        .with_parameters(parameters)
                        #(.with_tag(#tags))*
                        #requires
                })
            }

            async fn call(
                &self,
                __arguments: #private::serde_json::Map<::std::string::String, #private::serde_json::Value>,
                __context: ::toolgate_runtime::ToolContext,
            ) -> ::core::result::Result<#private::serde_json::Value, ::toolgate_runtime::ToolError> {
                let __args: #args_name = #private::serde_json::from_value(
                    #private::serde_json::Value::Object(__arguments),
                )
                .map_err(|e| {
                    ::toolgate_runtime::ToolError::new(::std::format!(
                        "invalid arguments for `{}`: {}", #tool_name, e
                    ))
                })?;
                #unused_args
                let _ = &__context;
                let __output = #fn_name(#(#call_args),*) #awaited;
                let __value = #value;
                #private::serde_json::to_value(__value).map_err(|e| {
                    ::toolgate_runtime::ToolError::new(::std::format!(
                        "`{}` returned a value that is not JSON: {}", #tool_name, e
                    ))
                })
            }
        }
    })
}
